"""The few things a sweep needs of a frame, for pandas and polars: one engine, two kinds of frame.

The engine reads a frame's column names and rows as records, and gives back whole columns of
results (for a comparison of models, on the frame's rows repeated: one per row and model);
:func:`table` wraps a pandas or a polars DataFrame (a LazyFrame is collected first) in that small
interface, so ``df.mediagen`` and ``pl_df.mediagen`` share every line of the engine.
Neither library is imported here unless the frame given is one of its own.
"""

import json
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

ATTRS = "_mediagen_attrs"  # a polars frame's stand-in for pandas' DataFrame.attrs


class Table(Protocol):
    """A frame as the engine sees it."""

    native: Any

    def names(self) -> list[str]: ...

    def records(self) -> list[dict[str, Any]]: ...

    def labels(self) -> list[Any]: ...

    def attrs(self) -> dict[str, Any]: ...

    def with_columns(
        self,
        columns: Mapping[str, Sequence[Any]],
        attrs: Mapping[str, Any],
        rows: Sequence[int] | None = None,
    ) -> Any: ...


class PandasTable:
    """A pandas DataFrame."""

    def __init__(self, df: Any) -> None:
        self.native = df

    def names(self) -> list[str]:
        return [str(c) for c in self.native.columns]

    def records(self) -> list[dict[str, Any]]:
        return [{str(k): v for k, v in record.items()} for record in self.native.to_dict("records")]

    def labels(self) -> list[Any]:
        return list(self.native.index)

    def attrs(self) -> dict[str, Any]:
        return dict(self.native.attrs)

    def with_columns(
        self,
        columns: Mapping[str, Sequence[Any]],
        attrs: Mapping[str, Any],
        rows: Sequence[int] | None = None,
    ) -> Any:
        import pandas as pd

        out = self.native.copy() if rows is None else self.native.iloc[list(rows)].copy()
        for name, values in columns.items():
            if name == "credits" and all(v is None or isinstance(v, int) for v in values):
                out[name] = pd.array(list(values), dtype="Int64")
            else:
                out[name] = list(values)
        out.attrs.update(attrs)
        return out


class PolarsTable:
    """A polars DataFrame; inputs go in as JSON text (polars infers a struct from the first row only)."""

    def __init__(self, df: Any) -> None:
        self.native = df

    def names(self) -> list[str]:
        return [str(c) for c in self.native.columns]

    def records(self) -> list[dict[str, Any]]:
        return list(self.native.to_dicts())

    def labels(self) -> list[Any]:
        return list(range(self.native.height))

    def attrs(self) -> dict[str, Any]:
        return dict(getattr(self.native, ATTRS, {}))

    def with_columns(
        self,
        columns: Mapping[str, Sequence[Any]],
        attrs: Mapping[str, Any],
        rows: Sequence[int] | None = None,
    ) -> Any:
        import polars as pl

        series = []
        for name, values in columns.items():
            if any(isinstance(v, Mapping) for v in values):
                values = [
                    json.dumps(v, ensure_ascii=False, sort_keys=True) if v is not None else None
                    for v in values
                ]
            dtype = pl.List(pl.String) if name.endswith("output_urls") else None
            series.append(pl.Series(name, list(values), dtype=dtype, strict=False))
        frame = self.native if rows is None else self.native.select(pl.all().gather(list(rows)))
        out = frame.with_columns(series)
        setattr(out, ATTRS, {**self.attrs(), **attrs})
        return out


def table(df: Any) -> Table:
    """The engine's view of ``df``: a pandas or polars DataFrame, or a polars LazyFrame (collected)."""
    module = type(df).__module__.split(".", 1)[0]
    if module == "pandas":
        return PandasTable(df)
    if module == "polars":
        import polars as pl

        return PolarsTable(df.collect() if isinstance(df, pl.LazyFrame) else df)
    raise TypeError(f"df must be a pandas or polars DataFrame, not {type(df).__name__}")


def as_pandas(df: Any) -> Any:
    """``df`` as a pandas DataFrame for what reads only pandas (the gallery, downloads)."""
    if type(df).__module__.split(".", 1)[0] == "pandas":
        return df
    import pandas as pd

    frame = table(df).native  # a LazyFrame collected
    return pd.DataFrame(frame.to_dicts(), columns=frame.columns)
