"""Job verdicts (running / finished / crashed / hung / waiting) with their evidence, and
the checkpoint guard, table by table."""

import os

import pytest

from remote_probe.watch import jobwatch as jw

NOW = 100000.0
OOM = """\
Epoch 3:  12%|█▏        | 120/1000 [00:31<03:48,  3.85it/s]
Traceback (most recent call last):
  File "/root/train.py", line 88, in <module>
    loss.backward()
  File "/usr/lib/python3/dist-packages/torch/_tensor.py", line 522, in backward
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.19 GiB is free.
""".splitlines()
NCCL_TIMEOUT = [
    "[rank1]:[E ProcessGroupNCCL.cpp:1316] [PG 0 Rank 1] Watchdog caught collective operation timeout: "
    "WorkNCCL(SeqNum=4521, OpType=ALLREDUCE, NumelIn=1, Timeout(ms)=600000) ran for 600012 milliseconds before timing out.",
]
NCCL_ERROR = [
    "Traceback (most recent call last):",
    "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, "
    "unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5",
]
PLAIN_TB = [
    "Traceback (most recent call last):",
    '  File "prep.py", line 3, in <module>',
    "    open(path)",
    "FileNotFoundError: [Errno 2] No such file or directory: '/root/autodl-tmp/data.csv'",
]
CUDA_ASSERT = ["RuntimeError: CUDA error: device-side assert triggered",
               "CUDA kernel errors might be asynchronously reported at some other API call"]
CTRL_C = ["^CTraceback (most recent call last):", '  File "train.py", line 5', "KeyboardInterrupt"]


def steady(util, power, span=900, step=5, end=NOW):
    return [(end - span + i * step, util, power) for i in range(span // step + 1)]


def facts(**kw):
    base = dict(now=NOW, alive=True, power_limit=400.0, started_t=NOW - 7200)
    base.update(kw)
    return jw.JobFacts(**base)


@pytest.mark.parametrize("name,f,state,cause", [
    ("oom-traceback", facts(alive=False, exit_status=1, last_lines=OOM), "crashed", "cuda_oom"),
    ("nccl-error", facts(alive=False, exit_status=1, last_lines=NCCL_ERROR), "crashed", "nccl_error"),
    ("nccl-watchdog-dead", facts(alive=False, exit_status=134, last_lines=NCCL_TIMEOUT), "crashed", "nccl_timeout"),
    ("nccl-watchdog-alive", facts(last_lines=NCCL_TIMEOUT, samples=steady(100, 80)), "hung", "nccl_timeout"),
    ("plain-traceback", facts(alive=False, exit_status=1, last_lines=PLAIN_TB), "crashed", "traceback"),
    ("cuda-assert", facts(alive=False, exit_status=1, last_lines=CUDA_ASSERT), "crashed", "cuda_error"),
    ("exit-137", facts(alive=False, exit_status=137, last_lines=["step 10/100"]), "crashed", "sigkill"),
    ("bash-killed", facts(alive=False, exit_status=137, last_lines=["Killed"]), "crashed", "sigkill"),
    ("tmux-signal", facts(alive=False, exit_status=None, exit_signal=11, last_lines=[]), "crashed", "signal"),
    ("segfault-text", facts(alive=False, exit_status=139, last_lines=["Segmentation fault (core dumped)"]),
     "crashed", "segfault"),
    ("sigterm", facts(alive=False, exit_status=143, last_lines=["step 5/10"]), "crashed", "signal"),
    ("bare-nonzero", facts(alive=False, exit_status=2, last_lines=["usage: train.py [-h]"]), "crashed", "exit_status"),
    ("cgroup-oom-kill", facts(alive=False, exit_status=None, last_lines=["step 9/10"], oom_kills=1),
     "crashed", "oom_killed"),
    ("cgroup-oom-but-exit-0", facts(alive=False, exit_status=0, last_lines=[], oom_kills=1), "finished", "exit_0"),
    ("exit-0", facts(alive=False, exit_status=0, last_lines=["Training complete."]), "finished", "exit_0"),
    ("exit-0-after-handled-tb", facts(alive=False, exit_status=0, last_lines=PLAIN_TB + ["retrying... done"]),
     "finished", "exit_0"),
    ("ctrl-c", facts(alive=False, exit_status=130, last_lines=CTRL_C), "finished", "interrupted"),
    ("exit-unknown", facts(alive=False, exit_status=None, last_lines=["bye"]), "finished", "exited"),
    # Ctrl-C seen in the pane's text, exit status unknown (a job under an interactive shell)
    ("ctrl-c-text", facts(alive=False, exit_status=None, last_lines=CTRL_C + ["$ "]), "finished",
     "interrupted"),
    # the same pane after an earlier job's Ctrl-C: this job ran on and ended by itself
    ("earlier-ctrl-c", facts(alive=False, exit_status=None, interrupts_before=1,
                             last_lines=CTRL_C + ["$ python3 -c 'sleep(12)'", "$ "]), "finished", "exited"),
    ("earlier-ctrl-c-own-line", facts(alive=False, exit_status=None, interrupts_before=1,
                                      last_lines=["^C"] + CTRL_C[0:1] + ["Traceback (most recent call last):"]
                                      + CTRL_C[1:] + ["$ ./again.sh", "$ "]), "finished", "exited"),
    ("hung-spin", facts(samples=steady(100, 70), vram_mib=60000, last_output_t=NOW - 5), "hung", "nccl_spin"),
    ("hung-stalled", facts(samples=steady(0, 60), vram_mib=30000, last_output_t=NOW - 1200,
                           last_write_t=NOW - 1500, uses_gpu=True), "hung", "stalled"),
    ("busy-training", facts(samples=steady(97, 350), vram_mib=60000, uses_gpu=True), "running", "gpu_busy"),
    ("spin-too-short", facts(samples=steady(100, 70, span=300), vram_mib=60000), "running", "gpu_busy"),
    ("spin-with-gap", facts(samples=steady(100, 70, span=900, step=60), vram_mib=60000), "running", "gpu_busy"),
    ("stalled-but-printing", facts(samples=steady(0, 60), vram_mib=30000, last_output_t=NOW - 3,
                                   uses_gpu=True), "running", "output_moving"),
    ("stalled-but-writing", facts(samples=steady(0, 60), vram_mib=30000, last_output_t=NOW - 1200,
                                  last_write_t=NOW - 30, uses_gpu=True), "waiting", "no_gpu_use"),
    ("mig-no-util", facts(samples=steady(None, None), vram_mib=9000, last_output_t=NOW - 3000,
                          uses_gpu=True), "running", "util_unknown"),
    ("cpu-preprocessing", facts(samples=steady(0, 60), vram_mib=None, uses_gpu=False,
                                last_output_t=NOW - 2), "waiting", "no_gpu_use"),
    ("no-samples", facts(samples=[], uses_gpu=False), "waiting", "no_gpu_use"),
])
def test_classify(name, f, state, cause):
    v = jw.classify(f)
    assert (v.state, v.cause) == (state, cause), v.evidence
    assert v.evidence and "\n" not in v.evidence.split("\n")[0]


def test_crash_evidence_names_the_cause_and_keeps_last_lines():
    v = jw.classify(facts(alive=False, exit_status=1, last_lines=OOM))
    first, *rest = v.evidence.split("\n")
    assert first.startswith("torch.OutOfMemoryError: CUDA out of memory")
    assert any("loss.backward()" in x for x in rest)
    assert v.exit_status == 1
    v = jw.classify(facts(alive=False, exit_status=1, last_lines=PLAIN_TB))
    assert v.evidence.startswith("FileNotFoundError: [Errno 2]")


def test_hung_threshold_is_configurable():
    f = facts(samples=steady(100, 70, span=400), vram_mib=60000)
    assert jw.classify(f).state == "running"
    assert jw.classify(f, hung_after=300).state == "hung"


def test_spin_needs_power_near_idle():
    # Pinned utilization at real power is a busy job, not a hang.
    f = facts(samples=steady(99, 0.8 * 400), vram_mib=60000)
    assert jw.classify(f).state == "running"
    at_threshold = facts(samples=steady(jw.HUNG_UTIL_PINNED, jw.HUNG_POWER_FRACTION * 400), vram_mib=1)
    assert jw.classify(at_threshold).cause == "nccl_spin"
    just_under = facts(samples=steady(jw.HUNG_UTIL_PINNED - 1, 60), vram_mib=1)
    assert jw.classify(just_under).state == "running"


def test_one_busy_sample_breaks_the_stall():
    samples = steady(0, 60)
    samples[len(samples) // 2] = (samples[len(samples) // 2][0], 60, 200)
    f = facts(samples=samples, vram_mib=30000, last_output_t=NOW - 1200, uses_gpu=True)
    assert jw.classify(f).state != "hung"


@pytest.mark.parametrize("raw,clean", [
    ("\x1b[31mError\x1b[0m: boom", "Error: boom"),
    ("step 1\rstep 2\r", "step 2"),
    ("bell\x07 and nul\x00", "bell and nul"),
    ("HF_TOKEN=hf_abcdefgh123 python train.py", "HF_TOKEN=**** python train.py"),
    ("--api-key sk-123 --password: 'p w'", "--api-key sk-123 --password: ****"),
    ("x" * 500, "x" * 199 + "…"),
])
def test_sanitize_line(raw, clean):
    assert jw.sanitize_line(raw) == clean


def test_evidence_is_sanitized():
    v = jw.classify(facts(alive=False, exit_status=1, last_lines=[
        "WANDB_API_KEY=abc123secret", "\x1b]0;evil\x07RuntimeError: CUDA error: illegal memory access"]))
    assert "abc123secret" not in v.evidence and "\x1b" not in v.evidence and "\x07" not in v.evidence
    assert v.cause == "cuda_error"


@pytest.mark.parametrize("text,count", [
    ("low 0\nhigh 0\nmax 12\noom 3\noom_kill 2\noom_group_kill 0\n", 2),
    ("oom_kill_disable 0\nunder_oom 0\noom_kill 7\n", 7),
    ("low 0\n", None), ("", None),
])
def test_parse_oom_kills(text, count):
    assert jw.parse_oom_kills(text) == count


def test_memory_oom_kills_reads_the_first_file_that_says(tmp_path):
    v2 = tmp_path / "memory.events"
    v2.write_text("oom 1\noom_kill 4\n")
    assert jw.memory_oom_kills([str(tmp_path / "absent"), str(v2)]) == 4
    assert jw.memory_oom_kills([str(tmp_path / "absent")]) is None


def test_proc_chars_written_of_this_process(tmp_path):
    before = jw.proc_chars_written(os.getpid())
    assert isinstance(before, int)
    with open(str(tmp_path / "f"), "wb") as f:
        f.write(b"x" * 100000)
    assert jw.proc_chars_written(os.getpid()) >= before + 100000
    assert jw.proc_chars_written(2 ** 22 + 12345) is None


def test_write_watch_notes_the_last_change():
    w = jw.WriteWatch()
    assert w.observe(0, {10: 500}) == 0
    assert w.observe(5, {10: 500}) == 0
    assert w.observe(10, {10: 800, 11: None}) == 10
    assert w.observe(20, {10: 800, 12: 3}) == 10  # a new process's first reading is no write
    assert w.observe(30, {10: 800, 12: 4}) == 30


# ---- checkpoint guard

def _touch(path, mtime):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(b"x")
    os.utime(path, (mtime, mtime))


def test_newest_checkpoint_files_and_dirs(tmp_path):
    run = tmp_path / "run"
    _touch(str(run / "out" / "model_epoch3.pt"), NOW - 5000)
    _touch(str(run / "out" / "last.ckpt"), NOW - 4000)
    _touch(str(run / "hf" / "checkpoint-500" / "optimizer.pt"), NOW - 3000)
    _touch(str(run / "hf" / "checkpoint-1000" / "trainer_state.json"), NOW - 100)
    _touch(str(run / "logs" / "events.out.tfevents"), NOW - 1)  # not a checkpoint
    _touch(str(run / "data" / "vocab.bin"), NOW - 2)  # a .bin that is no model
    _touch(str(run / ".git" / "objects" / "x.pt"), NOW)  # skipped
    path, mtime = jw.newest_checkpoint([str(run)])
    assert path.endswith("checkpoint-1000/") and mtime == NOW - 100
    (run / "hf" / "checkpoint-1000" / "trainer_state.json").unlink()
    path, _ = jw.newest_checkpoint([str(run)])
    assert path.endswith("checkpoint-500/")


def test_newest_checkpoint_does_not_follow_symlinks(tmp_path):
    outside = tmp_path / "elsewhere"
    _touch(str(outside / "huge.safetensors"), NOW)
    run = tmp_path / "run"
    _touch(str(run / "w.safetensors"), NOW - 50)
    os.symlink(str(outside), str(run / "link"))
    os.symlink(str(outside / "huge.safetensors"), str(run / "link.safetensors"))
    path, _ = jw.newest_checkpoint([str(run)])
    assert path.endswith("w.safetensors")


def test_newest_checkpoint_none_and_limits(tmp_path):
    assert jw.newest_checkpoint([str(tmp_path / "missing")]) is None
    deep = tmp_path / "a" / "b" / "c" / "d" / "e" / "f"
    _touch(str(deep / "m.pt"), NOW)
    assert jw.newest_checkpoint([str(tmp_path)]) is None  # deeper than SCAN_MAX_DEPTH
    assert jw.newest_checkpoint([str(tmp_path)], max_depth=10) is not None
    assert jw.newest_checkpoint([str(tmp_path)], max_depth=10, max_entries=3) is None


@pytest.mark.parametrize("newest,started,wiped,state,on_wiped", [
    (("/root/out/a.pt", NOW - 600), NOW - 7200, (), "fresh", False),
    (("/root/out/a.pt", NOW - 4 * 3600), NOW - 5 * 3600, (), "stale", False),
    (None, NOW - 600, (), "none_yet", False),
    (None, NOW - 4 * 3600, (), "none", False),
    (("/root/autodl-tmp/ck/a.pt", NOW - 60), NOW - 600, ("/root/autodl-tmp",), "fresh", True),
    (("/root/autodl-tmpX/a.pt", NOW - 60), NOW - 600, ("/root/autodl-tmp",), "fresh", False),
])
def test_checkpoint_status(newest, started, wiped, state, on_wiped):
    got = jw.checkpoint_status(newest, NOW, started_t=started, wiped_prefixes=wiped)
    assert got["state"] == state and got["on_wiped_disk"] == on_wiped
    if newest:
        assert got["age_seconds"] == NOW - newest[1]


def test_checkpoint_stale_age_is_configurable():
    got = jw.checkpoint_status(("/x/a.pt", NOW - 1800), NOW, started_t=NOW - 7200, stale_after=900)
    assert got["state"] == "stale"


@pytest.mark.parametrize("lines,sig", [
    (["step 3/10", "Terminated"], 15),                                     # bash, dash
    (["[1]+  Terminated              ./train.sh"], 15),                    # bash job control
    (["zsh: terminated  ./train.sh"], 15),
    (["fish: Job 1, './train.sh' terminated by signal SIGTERM (Polite quit request)"], 15),
    (["Aborted (core dumped)"], 6),
    (["Hangup"], 1),
    (["Terminated training at epoch 5"], None),                            # the job's own log
    (["training terminated early", "done"], None),
    (["step 3/10"], None),
])
def test_the_shell_says_which_signal_ended_a_job_it_ran(lines, sig):
    assert jw.shell_reported_signal(lines) == sig


def test_a_job_typed_into_a_shell_and_killed_is_crashed_not_finished():
    # tried as a user: `./train.sh` in the user's own tmux, then `kill` from elsewhere: the
    # pane's shell lives on (no exit status for us) and says "Terminated"; it was "finished"
    lines = ["root@vm:~/job# ./train.sh", "epoch 3 loss 0.41", "Terminated", "root@vm:~/job#"]
    v = jw.classify(facts(alive=False, exit_status=None, last_lines=lines))
    assert (v.state, v.cause) == ("crashed", "signal") and "killed by SIGTERM" in v.evidence
    clean = ["root@vm:~/job# ./train.sh", "epoch 10 loss 0.12", "root@vm:~/job#"]
    assert jw.classify(facts(alive=False, exit_status=None, last_lines=clean)).state == "finished"


# ---- issue 36: progress that stopped, the stuck rank, SIGKILL, one-liners ---------------------
def stalled(last_step_ago, step_s=3.0, util=100, power=70, span=420, **kw):
    return facts(samples=steady(util, power, span=span), vram_mib=40000, uses_gpu=True,
                 last_output_t=NOW - 1, last_step_t=NOW - last_step_ago, step_s=step_s, **kw)


def test_progress_stalled_at_idle_power_is_hung_long_before_the_signature_window():
    v = jw.classify(stalled(130))  # 10 x 3 s = 30 s, floored at 2 min
    assert (v.state, v.cause) == ("hung", "progress_stalled")
    assert "no new step for 2 min" in v.evidence.split("\n")[0]
    assert jw.classify(stalled(100)).state == "running"  # inside the 2 min floor: an eval pause


def test_a_stopped_bar_over_a_busy_gpu_is_not_hung():
    v = jw.classify(stalled(400, util=97, power=350))  # real compute: an eval loop without a bar
    assert v.state == "running"


def test_the_stall_window_follows_the_jobs_own_step_time_and_the_users_bound():
    slow = stalled(290, step_s=30.0)  # 10 x 30 s = 5 min
    assert jw.classify(slow).state == "running"
    assert jw.classify(stalled(301, step_s=30.0)).cause == "progress_stalled"
    assert jw.stall_window(slow, hung_after=60) == 60  # the user's hung_after bounds it
    assert jw.stall_window(facts()) is None  # no progress seen: only the GPU signature judges


def test_the_idle_rank_among_spinning_ones_is_named_stuck():
    spin, idle = steady(100, 70), steady(0, 60)
    f = facts(samples=spin, uses_gpu=True, vram_mib=80000, last_output_t=NOW - 1,
              last_step_t=NOW - 200, step_s=2.0, gpu_samples={0: spin, 1: idle},
              power_limits={0: 400.0, 1: 400.0}, gpu_pids={0: [(4100, 0)], 1: [(4101, 1)]})
    v = jw.classify(f)
    assert (v.state, v.cause) == ("hung", "progress_stalled")
    assert v.stuck == [{"gpu": 1, "pid": 4101, "rank": 1, "how": "idle"}]
    assert "GPU 1 (rank 1, pid 4101) idle" in v.evidence.split("\n")[0]


def test_all_ranks_spinning_on_the_signature_names_every_gpu():
    spin = steady(100, 70)
    f = facts(samples=spin, vram_mib=80000, last_output_t=NOW - 1, gpu_samples={0: spin, 1: spin},
              gpu_pids={0: [(7, None)], 1: [(8, None)]})
    v = jw.classify(f)
    assert (v.state, v.cause) == ("hung", "nccl_spin")
    assert [(r["gpu"], r["how"]) for r in v.stuck] == [(0, "spinning"), (1, "spinning")]


def test_the_nccl_signature_is_told_within_ten_minutes():
    assert jw.HUNG_AFTER_S + 3 < 600  # + one jobs scan (watch_loop.CAPTURE_EVERY_S)
    assert jw.classify(facts(samples=steady(100, 70, span=500), vram_mib=60000,
                             last_output_t=NOW - 5)).state == "hung"


@pytest.mark.parametrize("points,step", [
    ([], None), ([(0, 0), (3, 0)], None), ([(0, 0), (3, 0), (6, 0), (30, 0)], 3),
    ([(0, 0), (10, 0), (20, 0), (25, 0)], 10)])
def test_step_time_is_the_median_gap(points, step):
    assert jw.step_time(points) == step


@pytest.mark.parametrize("env,cmd,rank", [
    ({"RANK": "3", "LOCAL_RANK": "1"}, "", 3), ({"LOCAL_RANK": "1"}, "", 1),
    ({}, "python train.py --local-rank 2", 2), ({}, "python train.py --local_rank=5", 5),
    ({"RANK": "x"}, "python train.py", None)])
def test_rank_of(env, cmd, rank):
    assert jw.rank_of(env, cmd) == rank


def test_sigkill_is_a_guess_at_oom_unless_the_kernel_counted_one():
    guess = jw.classify(facts(alive=False, exit_status=137, last_lines=["Killed"]))
    assert (guess.state, guess.cause) == ("crashed", "sigkill")
    assert "out of memory?" in guess.evidence.split("\n")[0]
    sure = jw.classify(facts(alive=False, exit_status=137, last_lines=["Killed"], oom_kills=1))
    assert (sure.state, sure.cause) == ("crashed", "oom_killed")
    kernel = jw.classify(facts(alive=False, exit_status=None,
                               last_lines=["Out of memory: Killed process 4242 (python)"]))
    assert kernel.cause == "oom_killed"


def test_a_stopped_bar_while_the_job_writes_a_checkpoint_is_not_hung():
    w = jw.WriteWatch()
    w.observe(NOW - 300, {1: 1000})
    w.observe(NOW - 100, {1: 1000 + (2 << 30)})  # 2 GiB: torch.save of a big model, GPU idle
    w.observe(NOW, {1: 1000 + (2 << 30) + 50})
    assert w.bytes_since(NOW - 130) == (2 << 30) + 50
    assert jw.classify(stalled(130, writes=w)).state == "running"
    heartbeat = jw.WriteWatch()
    for i in range(0, 301, 3):
        heartbeat.observe(NOW - 300 + i, {1: 100 + 60 * i})  # a log line now and then
    assert jw.classify(stalled(130, writes=heartbeat)).cause == "progress_stalled"


def test_watch_order_keeps_gpu_then_watched_then_newest():
    from remote_probe.watch.tracked import watch_order
    start = {10: 100.0, 20: 300.0, 30: 200.0, 5: 400.0, 7: None}.get  # pid 5: wrapped, newest
    assert watch_order([10, 20, 30, 5, 7], gpu_procs={30: 1}, watched={10}, start=start) == [30, 10, 5, 20, 7]


@pytest.mark.parametrize("line, prompt", [
    ("try5box@vm:~$", True), ("(base) root@autodl-container:~#", True), ("[alice@gpu01 run]$", True),
    ("alice@mac ~ %", True), ("➜  ~", True), ("❯", True),
    ("epoch 3/10 loss 0.2", False), ("Killed", False), ("RuntimeError: CUDA out of memory", False),
    ("mail alice@example.com for access", False),
])
def test_without_prompt_drops_only_trailing_prompts(line, prompt):
    assert jw.without_prompt(["Killed", line]) == (["Killed"] if prompt else ["Killed", line])
    assert jw.without_prompt([line, "Killed"]) == [line, "Killed"]  # only at the end


def test_a_crash_reason_does_not_quote_the_prompt_after_it():
    facts = jw.JobFacts(1000.0, False, last_lines=["epoch 19/100", "Killed", "try5box@vm:~$ "],
                        started_t=0.0)
    v = jw.classify(facts)
    assert v.state == jw.CRASHED and "try5box@vm:~$" not in v.evidence


def test_an_end_short_of_its_progress_is_a_crash_whatever_the_status_is_unknown():
    v = jw.classify(jw.JobFacts(1000.0, False, last_lines=["epoch 26/100"], started_t=0.0,
                                pane_closed=True, progress=0.26))
    assert (v.state, v.cause) == (jw.CRASHED, "ended_early")
    assert v.evidence.split("\n")[0] == "ended at 26% of its progress (its tmux pane closed with it)"
    done = jw.classify(jw.JobFacts(1000.0, False, last_lines=["epoch 100/100"], started_t=0.0,
                                   pane_closed=True, progress=1.0))
    assert (done.state, done.cause) == (jw.FINISHED, "exited")


def test_the_write_history_outlasts_the_longest_hang_window():
    from remote_probe.watch import counters
    assert counters.KEEP_S >= 2 * jw.HUNG_AFTER_S  # bytes_since() must reach back over the window
