"""What ``%replicate`` shows before it pays for a render: the plan of an analysis and its price.

Nothing here charges: the plan is shown from an analysis already made (its blueprint as a table, the
render's price from the catalog's listed price a clip), and ``--estimate`` before any analysis says
what the analysis and the render will cost.
"""

from html import escape
from typing import Any

from mediagen_nb.notebook.cells import MagicError, store
from mediagen_nb.notebook.live import is_rich
from mediagen_nb.notebook.session import SESSION
from mediagen_nb.protocol import messages


def clips(raw: Any) -> list[int] | None:
    """``--clips 0,2,5`` as clip indexes; a word that is none is one line naming the option."""
    if raw is None:
        return None
    try:
        return [int(part) for part in str(raw).replace(" ", "").split(",") if part]
    except ValueError:
        raise MagicError(f"--clips {raw!r}: give clip indexes counted from 0, like 0,2,5") from None


def estimate(shell: Any, client: Any, url: str, render: dict[str, Any], flags: dict[str, Any]) -> Any:
    """The render's price from an earlier analysis of the link, or what the analysis costs: no charge."""
    from mediagen_nb.protocol import limits as spec_limits
    from mediagen_nb.protocol import replication as rules

    analysis = client.analysis_of(url)
    if analysis is not None and analysis.status == "ready":
        show_plan(shell, analysis, render)
        return store(shell, flags, analysis)
    models = {m.id: m for m in client.models()}
    model = models.get(render["model_id"] or rules.DEFAULTS["modelId"])
    per_clip = (
        f"{messages.credits(model.credits)} a clip ({model.id}, listed)"
        if model
        else "the model's price a clip"
    )
    print(
        f"replicate {url}: the analysis costs {spec_limits.ANALYSIS_CREDITS} credits (flat; refunded "
        "if it fails) and has not run, so the clip count is not known yet. The render costs "
        f"about {per_clip} times the clips. Nothing was charged: run %replicate URL --analyze "
        "(5 credits) to see the plan and its price, then %replicate URL renders (reusing the analysis)."
    )
    return None


def show_plan(shell: Any, analysis: Any, render: dict[str, Any], *, table: bool = True) -> None:
    """What rendering will cost, before anything is charged for it, after the blueprint as a table
    unless ``table`` is false (an analysis reused from an earlier cell, whose table was shown there)."""
    from mediagen_nb.protocol import replication as rules

    client = SESSION.client
    models = {m.id: m for m in client.models()}
    model = models.get(render["model_id"] or rules.DEFAULTS["modelId"])
    chosen_clips = render["clips"]
    chosen = len(set(chosen_clips)) if chosen_clips is not None else analysis.clip_count or 0
    price = model.credits if model is not None else None
    count = analysis.clip_count
    if chosen_clips is not None and count is not None and max(chosen_clips) >= count:
        raise MagicError(
            f"--clips {','.join(map(str, chosen_clips))}: this video has {count} clips, "
            f"counted from 0 to {count - 1}; nothing was rendered"
        )
    cost = (
        f"render: about {chosen * price} credits: {chosen} clips x {price} credits ({model.id} listed "
        "price); quality and clip lengths change it, and accuracy=fast packs clips into fewer generations"
        if model is not None and price is not None
        else "render: the model's price per clip"
    )
    if is_rich(shell):
        from IPython.display import HTML, display

        shown = table and analysis.blueprint is not None
        blueprint = analysis.blueprint._repr_html_() if shown else ""
        display(HTML(f"{blueprint}<div>{escape(cost)}</div>"))
    else:
        for row in analysis.blueprint.rows() if table and analysis.blueprint is not None else []:
            print(f"  clip {row['clip']}: {row['start']}-{row['end']} s  {row['camera']}  {row['prompt']}")
        print(cost)
