"""The kernel's word on a job's end (issue 36): the OOM killer's line and NVIDIA Xids, parsed
from recorded /dev/kmsg records, matched to a job, and named in its crash verdict."""

import os

import pytest

from remote_probe.watch import jobwatch as jw
from remote_probe.watch import kernel_log as kl

# Records as /dev/kmsg gives them (priority,seq,usec since boot,flags;text), from real boxes.
OOM = "3,8123,86400123456,-;Out of memory: Killed process 4242 (python) total-vm:61234567kB, anon-rss:50234123kB"
OOM_V2 = ("6,8122,86400120000,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,"
          "mems_allowed=0,oom_memcg=/docker/ab12,task_memcg=/docker/ab12,task=python,pid=4242,uid=0")
XID_PID = "4,9001,90000000000,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=4242, name=python, GPU has fallen off the bus."
XID_UNKNOWN = "4,9002,90000100000,-;NVRM: Xid (PCI:0000:3B:00): 48, pid='<unknown>', name=<unknown>, An uncorrectable double bit error"
NOISE = "6,1,5000,-;eth0: link up"


def test_records_parse_to_time_and_text():
    assert kl.parse_record(OOM)[0] == pytest.approx(86400.123456)
    assert kl.parse_record(" SUBSYSTEM=pci") is None  # a continuation line
    assert kl.parse_record("garbage") is None


@pytest.mark.parametrize("record,kind,pid,xid", [
    (OOM, "oom", 4242, None), (OOM_V2, "oom", 4242, None), (XID_PID, "xid", 4242, 79),
    (XID_UNKNOWN, "xid", None, 48), (NOISE, None, None, None)])
def test_events(record, kind, pid, xid):
    ev = kl.parse_event(kl.parse_record(record)[1])
    if kind is None:
        assert ev is None
        return
    assert (ev["kind"], ev["pid"]) == (kind, pid)
    if xid:
        assert ev["xid"] == xid and ev["words"] == kl.XID_WORDS[xid]


def test_a_job_gets_its_own_lines_only():
    events = [dict(kl.parse_event(kl.parse_record(r)[1]), t=0) for r in (OOM, XID_PID, XID_UNKNOWN)]
    events.append({"kind": "oom", "pid": 999, "name": "other", "line": "Out of memory: Killed process 999"})
    mine = kl.for_job(events, {4242, 4243}, ["00000000:3B:00.0"])
    assert [e.get("xid") for e in mine] == [None, 79, 48]
    assert kl.for_job(events, {7}, ["00000000:AF:00.0"]) == []  # another GPU's Xid is not its


def test_read_events_from_a_ring_file_and_an_unreadable_box(tmp_path):
    ring = tmp_path / "kmsg"
    ring.write_text("\n".join([NOISE, OOM, XID_PID]) + "\n")
    events = kl.read_events(str(ring), boot=1000.0)
    assert [(e["kind"], e["t"]) for e in events] == [("oom", pytest.approx(87400.123456)),
                                                      ("xid", pytest.approx(91000.0))]
    assert [e["kind"] for e in kl.read_events(str(ring), boot=1000.0, since=90000)] == ["xid"]
    assert kl.read_events(str(tmp_path / "absent")) == []  # a container: no ring, no error


@pytest.mark.skipif(not os.access("/dev/kmsg", os.R_OK), reason="the kernel ring is not readable here")
def test_the_real_ring_reads_without_error():
    assert isinstance(kl.read_events(since=0), list)


def facts(**kw):
    base = dict(now=1e5, alive=False, power_limit=400.0, started_t=1e5 - 3600)
    base.update(kw)
    return jw.JobFacts(**base)


def test_the_kernels_oom_line_turns_a_guess_into_a_cause():
    oom = kl.parse_event(kl.parse_record(OOM)[1])
    v = jw.classify(facts(exit_status=137, last_lines=["Killed"], kernel=[oom]))
    assert (v.state, v.cause) == ("crashed", "oom_killed")
    assert any(line.startswith("kernel: Out of memory: Killed process 4242") for line in v.evidence.split("\n"))


def test_an_xid_names_the_gpu_fault():
    xid = kl.parse_event(kl.parse_record(XID_PID)[1])
    v = jw.classify(facts(exit_status=None, exit_signal=6, last_lines=["step 99"], kernel=[xid]))
    assert (v.state, v.cause) == ("crashed", "gpu_xid")
    assert v.evidence.split("\n")[0] == "GPU fault: Xid 79 (GPU has fallen off the bus)"
    clean = jw.classify(facts(exit_status=0, last_lines=["done"], kernel=[xid]))
    assert clean.state == "finished"  # exit 0 is the truth
