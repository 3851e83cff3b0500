"""The main job: a bundled spreadsheet sweep, then the spec's three-step chain.

``mediagen demo`` runs on the embedded sandbox (no key needed) or, with ``MEDIAGEN_API_KEY`` and
``MEDIAGEN_BASE_URL`` set, on the service. The sweep prices the bundled prompts, runs them with a
progress bar and writes an HTML gallery; the chain makes a face, a cloned voice and a lip-synced
video, each step's output URL feeding the next one.
"""

import argparse
from pathlib import Path

from mediagen_nb.client import Client, Generation, current, files
from mediagen_nb.protocol import messages
from mediagen_nb.protocol.paths import path

FACE_PROMPT = "Studio portrait of a friendly science presenter looking into the camera, soft light"
SCRIPT = "Hi! In the next minute I'll show you how a picture, a voice and a video come together."


def _report(step: str, generation: Generation) -> None:
    print(f"{step:<28} {generation.url}")
    money = "reused, no charge" if generation.reused else messages.credits(generation.credits_spent)
    print(f"{'':<28} {money}, {generation.elapsed_s or 0:.1f} s")


def three_step_chain(client: Client, voice_sample: str, *, resolution: str = "480p") -> list[Generation]:
    """gpt-image-2 face -> zonos2 voice -> infinitetalk lip-sync; each step prints its URL and credits.

    Each step is asked with ``reuse=True``, as the magics and the CLI ask: running the demo again finds
    its earlier generations on the kept sandbox at no charge, the toolkit's promise shown."""
    face = client.generate("gpt-image-2", prompt=FACE_PROMPT, quality="low", aspect_ratio="2:3", reuse=True)
    _report("1. face (gpt-image-2)", face)
    voice = client.generate("zonos2", text=SCRIPT, audio=voice_sample, reuse=True)
    _report("2. voice (zonos2)", voice)
    price = client.estimate("infinitetalk", image=face.url, audio=voice.url, resolution=resolution)
    print(f"   lip-sync estimate: {messages.credits(price.credits)} ({price.billing})")
    talk = client.generate("infinitetalk", image=face.url, audio=voice.url, resolution=resolution, reuse=True)
    _report("3. lip-sync (infinitetalk)", talk)
    return [face, voice, talk]


def download(generations: list[Generation], folder: Path) -> list[Path]:
    """Save each output next to the others, so the results outlive the embedded sandbox."""
    saved = []
    for n, generation in enumerate(generations, 1):
        kind = files.extension(generation.output_type, generation.url)
        saved.append(generation.save(files.place(folder, n, generation.model_id, extension=kind)))
    return saved


def sweep(folder: Path) -> None:
    """Estimate, run and show the bundled spreadsheet as a gallery (via ``mediagen sweep``)."""
    from mediagen_nb.batch.cli import main as sweep_main
    from mediagen_nb.batch.samples import sample_file

    print(f"== sweep: {sample_file().name} through gpt-image-2")
    code = sweep_main(
        [
            str(sample_file()),
            "--model=gpt-image-2",
            "--template=prompt=A {style} picture of {subject}",
            f"--out={folder / 'sweep-results.xlsx'}",
            f"--download={folder / 'sweep-media'}",
            f"--gallery={folder / 'gallery.html'}",
        ]
    )
    if code:
        raise SystemExit(code)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mediagen demo", description=__doc__.splitlines()[0])
    parser.add_argument("--voice", help="public https .mp3/.wav voice sample (default: the sandbox's sample)")
    parser.add_argument("--resolution", default="480p", choices=["480p", "720p"], help="lip-sync resolution")
    parser.add_argument("--out", type=Path, default=Path("mediagen-demo"), help="folder for the results")
    args = parser.parse_args(argv)
    client = current()  # the one connection: the sweep below runs on it too
    sweep(args.out)
    print("== the three-step chain: face -> voice -> lip-sync")
    voice = args.voice
    if voice is None:
        if not client.settings.sandbox:
            parser.error("--voice is required on the service: a public https .mp3 or .wav voice sample")
        voice = client.base_url + path("sandbox_samples", name="voice.wav")
    generations = three_step_chain(client, voice, resolution=args.resolution)
    total = sum(g.credits_spent for g in generations if not g.reused)
    reused = sum(g.reused for g in generations)
    print(f"total: {total} credits spent now" + (f", {reused} steps reused at no charge" if reused else ""))
    for saved in download(generations, args.out):
        print(f"saved {saved}")
    return 0
