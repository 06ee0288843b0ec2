"""MkDocs hook: the site serves the figures of the top-level ``plots/`` folder at ``plots/<name>.png``.

``plots/`` sits beside ``docs/`` (the layout promised to users: pyproject.toml, asyncfl/, scenarios/,
tests/, plots/, README.md), and MkDocs reads only ``docs/``; adding the files here, instead of a copy
under ``docs/``, keeps one file per figure in the repository.  A page links them as ``plots/x.png``
relative to the site root (``../plots/x.png`` from a page one folder down), which ``--strict`` checks
like any other link.
"""

from pathlib import Path

from mkdocs.structure.files import File

PLOTS = Path(__file__).resolve().parents[2] / "plots"


def on_files(files, config, **kwargs):
    for figure in sorted(PLOTS.glob("*.png")):
        files.append(
            File(
                f"plots/{figure.name}",
                src_dir=str(PLOTS.parent),
                dest_dir=config["site_dir"],
                use_directory_urls=config["use_directory_urls"],
            )
        )
    return files
