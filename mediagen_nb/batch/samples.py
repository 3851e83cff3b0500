"""The sample data shipped inside the package, so the tour and the notebooks run from any folder.

``mg.sample_prompts()`` is the README tour's table; ``mg.sample_file("prompts.xlsx")`` the path of the
same rows as a spreadsheet, for ``pd.read_excel`` or ``mediagen sweep``. They come with a ``pip
install`` and do not depend on the working folder (JupyterLab starts a kernel in the notebook's
folder, papermill in the caller's).
"""

from importlib import resources
from pathlib import Path

import pandas as pd

SAMPLES = ("prompts.csv", "prompts.xlsx")


def sample_file(name: str = "prompts.xlsx") -> Path:
    """The path of a sample file shipped with the package: ``prompts.csv`` or ``prompts.xlsx``."""
    if name not in SAMPLES:
        raise ValueError(f"sample_file({name!r}): the samples are {', '.join(SAMPLES)}")
    return Path(str(resources.files("mediagen_nb") / "data" / name))


def sample_prompts() -> pd.DataFrame:
    """The sample prompts as a DataFrame: 12 rows of ``subject``, ``style``, ``quality``, ``aspect_ratio``."""
    return pd.read_csv(sample_file("prompts.csv"))
