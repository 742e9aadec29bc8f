"""The simulator's scenario names, from its shipped files alone: the laptop checks
`--simulate NAME` with this, without importing the simulator (and the /proc readers it
brings, ~0.35 MB the app would carry for the whole session, issue 25)."""

import os


def scenario_names():
    """Names of the scenarios shipped with the probe (a folder, or inside the zipapp)."""
    names = []
    try:
        here = os.path.dirname(os.path.abspath(__file__))
        if os.path.isdir(os.path.join(here, "scenarios")):
            names = os.listdir(os.path.join(here, "scenarios"))
        else:  # inside the zipapp
            import zipfile
            with zipfile.ZipFile(os.path.dirname(here)) as zf:
                names = [n.rsplit("/", 1)[-1] for n in zf.namelist()
                         if n.startswith("remote_probe/scenarios/")]
    except (OSError, ValueError):
        pass
    return sorted(n[:-5] for n in names if n.endswith(".json"))
