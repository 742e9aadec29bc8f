"""The checklist's box side against hostile repos and files: real git, real FIFOs."""

import os
import subprocess
import threading
import time

import pytest

from remote_probe.files import checklist_facts as checklist


def git(cwd, *args):
    subprocess.run(["git", "-C", str(cwd), *args], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL,
                   env=dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@x",
                            GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@x"))


def repo_with_commit(path):
    path.mkdir(parents=True)
    git(path, "init", "-q")
    (path / "notes.txt").write_text("v1\n")
    git(path, "add", "-A")
    git(path, "commit", "-qm", "v1")
    return path


def marker_script(tmp_path, name):
    marker = tmp_path / (name + ".ran")
    script = tmp_path / (name + ".sh")
    script.write_text("#!/bin/sh\ntouch %s\ncat\n" % marker)
    script.chmod(0o755)
    return script, marker


def test_a_repo_with_fsmonitor_set_does_not_run_it(tmp_path):
    repo = repo_with_commit(tmp_path / "work" / "code")
    script, marker = marker_script(tmp_path, "fsmonitor")
    git(repo, "config", "core.fsmonitor", str(script))
    (repo / "notes.txt").write_text("v2\n")
    subprocess.run(["git", "-C", str(repo), "status", "--porcelain"], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    assert marker.exists()  # plain git runs it: the hazard is real
    marker.unlink()
    facts = checklist.git_repos([str(tmp_path / "work")])
    assert not marker.exists()
    [r] = facts["repos"]
    assert r["state"] == "dirty" and r["dirty"] == 1 and r["dirty_files"] == ["notes.txt"]
    assert r["unpushed"] == 1


def test_a_repo_with_a_filter_driver_does_not_run_it(tmp_path):
    repo = repo_with_commit(tmp_path / "code")
    script, marker = marker_script(tmp_path, "filter")
    (repo / ".gitattributes").write_text("*.txt filter=evil\n")
    git(repo, "config", "filter.evil.clean", str(script))
    git(repo, "add", "-A")
    marker.unlink()  # `git add` ran it once, that is what the filter is for
    time.sleep(1.1)
    (repo / "notes.txt").write_text("v1\n")  # same content, new mtime: status must look
    subprocess.run(["git", "-C", str(repo), "status", "--porcelain"], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    assert marker.exists()
    marker.unlink()
    (repo / "notes.txt").write_text("v1\n")
    r = checklist.repo_facts("git", str(repo))
    assert not marker.exists() and r["state"] == "dirty"


def test_filter_names_are_read_from_git_config_output():
    out = "filter.lfs.clean\ngit-lfs clean -- %f\0filter.a.b.process\nx\0filter.lfs.required\ntrue\0"
    assert checklist.filter_names(out.split("\0")) == ["a.b", "lfs"]
    assert checklist.filter_names([""]) == []


def test_a_repo_git_cannot_read_is_unknown_not_clean(tmp_path):
    repo = repo_with_commit(tmp_path / "broken")
    (repo / ".git" / "HEAD").write_text("garbage\n")
    r = checklist.repo_facts("git", str(repo))
    assert r["state"] == "unknown" and r["dirty"] is None and r["unpushed"] is None
    assert r["error"]


def test_a_repo_of_another_user_is_not_inspected(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root to give the repo to another user")
    repo = repo_with_commit(tmp_path / "theirs")
    for dirpath, dirnames, filenames in os.walk(repo):
        for name in dirnames + filenames + [""]:
            os.lchown(os.path.join(dirpath, name), 65534, 65534)
    r = checklist.repo_facts("git", str(repo))
    assert r["state"] == "unknown" and "another user" in r["error"]


def test_hashing_never_blocks_on_a_fifo_or_a_device(tmp_path):
    fifo = tmp_path / "model.pt"
    os.mkfifo(fifo)
    link = tmp_path / "zero.pt"
    os.symlink("/dev/zero", link)
    done = []

    def work():
        for path in (fifo, link):
            try:
                checklist.sha256_of(str(path))
            except ValueError as exc:
                done.append(str(exc))
    t = threading.Thread(target=work, daemon=True)
    t.start()
    t.join(10)
    if t.is_alive():  # unblock the thread before failing
        with open(fifo, "wb"):
            pass
    assert len(done) == 2 and all("not a regular file" in d for d in done)


def test_a_regular_file_hashes_as_before(tmp_path):
    f = tmp_path / "w.pt"
    f.write_bytes(b"x" * (3 << 20))
    import hashlib
    assert checklist.sha256_of(str(f)) == hashlib.sha256(b"x" * (3 << 20)).hexdigest()


def test_the_artifact_list_is_bounded_and_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(checklist, "MAX_LISTED", 10)
    for i in range(25):
        (tmp_path / ("m%02d.pt" % i)).write_bytes(b"")
    arts = checklist.find_artifacts([str(tmp_path)])
    assert len(arts["files"]) == 10 and arts["truncated"]


def test_a_repo_git_cannot_read_is_a_warning_not_clean():
    from tui.core.checks.checklist import check_code
    item = check_code({"repos": [{"path": "/w/theirs", "state": "unknown", "dirty": None,
                                  "unpushed": None, "error": "owned by another user"}]})
    assert item.verdict == "warn" and "could not be read" in item.reason
    assert "owned by another user" in item.details[0]


def test_a_sparse_file_is_billed_for_what_it_holds():
    """`checklist` said "3.0 GiB billed as storage" for a sparse 3 GiB file holding nothing."""
    from tui.core.checks.checklist import check_temp
    item = check_temp([{"path": "/tmp/big.partial", "size": 3 << 30, "on_disk": 0, "kind": "temp"}])
    assert item.verdict == "pass"  # holding nothing, it costs nothing: no warning (issue 23)
    item = check_temp([{"path": "/tmp/big.partial", "size": 3 << 30, "on_disk": 2 << 20, "kind": "temp"}])
    assert item.verdict == "warn" and item.reason.startswith("2 MiB") and "sparse" in item.details[0]
    item = check_temp([{"path": "/tmp/real.bin", "size": 3 << 30, "on_disk": 3 << 30, "kind": "temp"}])
    assert "3.0 GiB" in item.reason
