"""remote_probe/provider/facts.py against a fake /proc, /sys and marker root (issue 22)."""

from remote_probe.provider import facts as pf
from tui.core.providers import detect


def fake_box(tmp_path, environ=None, dirs=(), files=(), vendor=None):
    proc, sys_, root = tmp_path / "proc", tmp_path / "sys", tmp_path / "root"
    (proc / "1").mkdir(parents=True)
    (proc / "1" / "environ").write_bytes(b"\0".join(
        ("%s=%s" % kv).encode() for kv in (environ or {}).items()) + b"\0")
    for d in dirs:
        (root / d.lstrip("/")).mkdir(parents=True)
    for f in files:
        (root / f.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
        (root / f.lstrip("/")).write_text("export http_proxy=...\n")
    if vendor:
        (sys_ / "class/dmi/id").mkdir(parents=True)
        (sys_ / "class/dmi/id/sys_vendor").write_text(vendor + "\n")
    return pf.gather(proc=str(proc), sys=str(sys_), root=str(root), own_env={}, hostname="h")


def test_vast_with_workspace_and_a_key_that_never_leaves(tmp_path):
    facts = fake_box(tmp_path, {"CONTAINER_ID": "42", "CONTAINER_API_KEY": "abcdef", "PATH": "/bin"},
                     dirs=["/workspace"])
    assert facts["env"] == {"CONTAINER_ID": "42", "CONTAINER_API_KEY": "set"}
    assert "abcdef" not in repr(facts) and "PATH" not in facts["env"]
    assert detect(facts) == "vast"


def test_gpuhub_and_autodl_markers(tmp_path):
    assert detect(fake_box(tmp_path / "a", dirs=["/root/gpuhub-tmp"])) == "gpuhub"
    facts = fake_box(tmp_path / "b", dirs=["/root/autodl-tmp"], files=["/etc/network_turbo"])
    assert detect(facts) == "autodl" and facts["files"] == ["/etc/network_turbo"]


def test_dmi_vendor_and_nothing(tmp_path):
    assert detect(fake_box(tmp_path / "a", vendor="Microsoft Corporation")) == "azure"
    facts = fake_box(tmp_path / "b")
    assert facts["env"] == {} and facts["paths"] == [] and detect(facts) == "unknown"


def test_unreadable_pid1_falls_back_to_our_environment(tmp_path):
    facts = pf.gather(proc=str(tmp_path / "none"), sys=str(tmp_path), root=str(tmp_path),
                      own_env={"RUNPOD_POD_ID": "p1", "RUNPOD_API_KEY": "k"}, hostname="h")
    assert facts["env"] == {"RUNPOD_POD_ID": "p1", "RUNPOD_API_KEY": "set"}


def test_secret_reads_pid1_first(tmp_path, monkeypatch):
    (tmp_path / "1").mkdir()
    (tmp_path / "1" / "environ").write_bytes(b"CONTAINER_API_KEY=frompid1\0")
    monkeypatch.setenv("CONTAINER_API_KEY", "fromsession")
    assert pf.secret("CONTAINER_API_KEY", proc=str(tmp_path)) == "frompid1"
    assert pf.secret("RUNPOD_API_KEY", proc=str(tmp_path)) is None
