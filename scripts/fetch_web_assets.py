"""Fetch the dashboard's third-party assets from the npm registry at pinned versions.

Every file under ``src/cogworker/web/static/vendor/`` is written by this script, never by
hand: each package is downloaded with ``npm pack`` (the registry's own client, which checks
the tarball against the registry's integrity hash), the pinned integrity is compared too,
and only the files the dashboard serves are extracted. The licenses of the packages are
copied into ``vendor/THIRD_PARTY.md``. The result is committed, so ``pip install`` works
offline.

Usage::

    python scripts/fetch_web_assets.py          # rewrite vendor/
    python scripts/fetch_web_assets.py --check  # exit 1 if vendor/ differs from a fresh fetch
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path
from xml.etree import ElementTree

ROOT = Path(__file__).resolve().parents[1]
VENDOR = ROOT / "src" / "cogworker" / "web" / "static" / "vendor"

SVG_NS = "http://www.w3.org/2000/svg"

ICONS = (
    "gauge", "stack", "calendar-dots", "cpu", "lock-key", "magnifying-glass", "arrow-clockwise",
    "trash", "pause", "play", "lightning", "hand-palm", "stop", "clock-counter-clockwise",
    "x", "caret-left", "caret-right", "caret-up", "caret-down", "moon", "sun",
    "broadcast", "warning", "check-circle", "arrows-out-line-horizontal", "database",
    "prohibit", "eye", "info", "broom", "sort-ascending", "sort-descending", "queue",
    "power", "circle", "list-magnifying-glass", "shield-check",
)


@dataclass(frozen=True)
class Package:
    name: str
    version: str
    integrity: str
    files: dict[str, str]  # path inside the tarball (under package/) -> name in vendor/
    license_files: tuple[str, ...]
    license: str
    homepage: str


PACKAGES = (
    Package("htmx.org", "2.0.11",
            "sha512-Thx/WtpeOQqSrqBCw/A1cwGJGg4UrVa3+sW0GmrM3p4gJgO89ecH4qtbnyzDDWFvBTqjnIMCgELTNt636dtamA==",
            {"dist/htmx.min.js": "htmx.min.js"}, ("LICENSE",), "0BSD", "https://htmx.org"),
    Package("uplot", "1.6.32",
            "sha512-KIMVnG68zvu5XXUbC4LQEPnhwOxBuLyW1AHtpm6IKTXImkbLgkMy+jabjLgSLMasNuGGzQm/ep3tOkyTxpiQIw==",
            {"dist/uPlot.iife.min.js": "uplot.min.js", "dist/uPlot.min.css": "uplot.min.css"},
            ("LICENSE",), "MIT", "https://github.com/leeoniya/uPlot"),
    Package("@fontsource-variable/inter", "5.3.0",
            "sha512-OupL48va4JNofb97w6NYeF9S7W/kHNKM0Er8Dem5nqi4jeOLrVJDoE8tZEpnMJmtkvNbB1EIPPwHcdkF6b1oUA==",
            {"files/inter-latin-wght-normal.woff2": "inter-latin-wght-normal.woff2"},
            ("LICENSE",), "OFL-1.1", "https://fontsource.org/fonts/inter"),
    Package("@phosphor-icons/core", "2.1.1",
            "sha512-v4ARvrip4qBCImOE5rmPUylOEK4iiED9ZyKjcvzuezqMaiRASCHKcRIuvvxL/twvLpkfnEODCOJp5dM4eZilxQ==",
            {}, ("LICENSE",), "MIT", "https://phosphoricons.com"),
)


def npm_pack(package: Package, workdir: Path) -> Path:
    """Download one package tarball with npm; returns its path (integrity checked)."""
    spec = f"{package.name}@{package.version}"
    reply = subprocess.run(["npm", "pack", spec, "--json", "--pack-destination", str(workdir)],
                           capture_output=True, text=True, check=True, cwd=workdir)
    info = json.loads(reply.stdout)[0]
    tarball = workdir / info["filename"]
    digest = "sha512-" + base64.b64encode(hashlib.sha512(tarball.read_bytes()).digest()).decode()
    if digest != package.integrity:
        sys.exit(f"{spec}: the tarball's integrity {digest} is not the pinned "
                 f"{package.integrity}; check the registry, then update the pin on purpose")
    return tarball


def member(archive: tarfile.TarFile, path: str) -> bytes:
    extracted = archive.extractfile(f"package/{path}")
    if extracted is None:
        sys.exit(f"package/{path} is missing from the tarball")
    return extracted.read()


def icon_sprite(archive: tarfile.TarFile) -> str:
    """One SVG sprite of the regular-weight icons the dashboard uses (``#i-<name>``)."""
    symbols = []
    for name in ICONS:
        svg = ElementTree.fromstring(member(archive, f"assets/regular/{name}.svg"))
        inner = "".join(ElementTree.tostring(child, encoding="unicode").replace(
            "ns0:", "").replace(f' xmlns:ns0="{SVG_NS}"', "") for child in svg)
        symbols.append(f'<symbol id="i-{name}" viewBox="{svg.get("viewBox")}">{inner}</symbol>')
    return (f'<svg xmlns="{SVG_NS}" fill="currentColor">\n' + "\n".join(symbols)
            + "\n</svg>\n")


def fetch(target: Path) -> None:
    """Write every vendored file and THIRD_PARTY.md into ``target``."""
    target.mkdir(parents=True, exist_ok=True)
    notices = ["# Third-party assets served by the dashboard", "",
               "Written by `scripts/fetch_web_assets.py` from the npm registry; do not edit.", ""]
    with tempfile.TemporaryDirectory() as tmp:
        for package in PACKAGES:
            with tarfile.open(npm_pack(package, Path(tmp))) as archive:
                for source, name in package.files.items():
                    (target / name).write_bytes(member(archive, source))
                if package.name == "@phosphor-icons/core":
                    (target / "icons.svg").write_text(icon_sprite(archive), encoding="utf-8")
                served = sorted(package.files.values()) or ["icons.svg"]
                notices += [f"## {package.name} {package.version}", "",
                            f"License: {package.license}. Home: {package.homepage}. "
                            f"Integrity: `{package.integrity}`. Files: "
                            + ", ".join(f"`{name}`" for name in served) + ".", "", "```"]
                for license_file in package.license_files:
                    notices.append(member(archive, license_file).decode("utf-8").strip())
                notices += ["```", ""]
    (target / "THIRD_PARTY.md").write_text("\n".join(notices), encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="compare a fresh fetch with the committed files")
    options = parser.parse_args()
    if not options.check:
        if VENDOR.exists():
            shutil.rmtree(VENDOR)
        fetch(VENDOR)
        print(f"wrote {VENDOR.relative_to(ROOT)}")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        fresh = Path(tmp) / "vendor"
        fetch(fresh)
        names = sorted({p.name for p in fresh.iterdir()} | {p.name for p in VENDOR.iterdir()})
        stale = [n for n in names if not (VENDOR / n).exists() or not (fresh / n).exists()
                 or (VENDOR / n).read_bytes() != (fresh / n).read_bytes()]
    if stale:
        print("vendor/ is out of date: " + ", ".join(stale) + "; run "
              "python scripts/fetch_web_assets.py", file=sys.stderr)
        return 1
    print("vendor/ matches the pinned packages")
    return 0


if __name__ == "__main__":
    sys.exit(main())
