"""The package's version, in a module of its own: the sandbox reads it without importing the package's
front door (``mediagen_nb/__init__.py``), and ``pyproject.toml`` takes it from here."""

__version__ = "0.1.0"
