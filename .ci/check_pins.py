"""Exit 1 naming every package of a pin file (``name==version`` lines) installed at another version."""

import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

moved = []
for line in Path(sys.argv[1]).read_text().splitlines():
    line = line.split("#")[0].strip()
    if not line:
        continue
    name, pinned = line.split("==")
    try:
        installed = version(name)
    except PackageNotFoundError:
        installed = "missing"
    if installed != pinned:
        moved.append(f"{name}: pinned {pinned}, installed {installed}")
if moved:
    sys.exit("installing the project moved what Colab pins:\n  " + "\n  ".join(moved))
print(f"every pin of {sys.argv[1]} is in place")
