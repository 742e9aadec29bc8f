"""Progress read from pane output: tqdm (real output, produced by running tqdm), Hugging
Face Trainer, Lightning and plain step/epoch lines; ETA from history; cost to finish."""

import io

import pytest

from remote_probe.watch import progress as pg

ESC = "\x1b"

# Faithful samples of what each tool prints (as the pane shows it, \r and colour kept).
HF_TRAINER = (
    "***** Running training *****\n"
    "  Num examples = 8,000\n  Num Epochs = 3\n  Total optimization steps = 1,500\n"
    "\r  0%|          | 0/1500 [00:00<?, ?it/s]"
    "\r 33%|███▎      | 500/1500 [01:40<03:20,  4.99it/s]\n"
    "{'loss': 0.6931, 'grad_norm': 3.21, 'learning_rate': 3.33e-05, 'epoch': 1.0}\n"
    "\r 33%|███▎      | 501/1500 [01:40<03:22,  4.93it/s]"
    "\r 40%|████      | 600/1500 [02:00<03:00,  5.00it/s]"
)
HF_DONE = HF_TRAINER + (
    "\r100%|██████████| 1500/1500 [05:00<00:00,  5.00it/s]\n"
    "{'train_runtime': 300.1, 'train_samples_per_second': 79.9, 'train_steps_per_second': 5.0, "
    "'train_loss': 0.41, 'epoch': 3.0}\n")
LIGHTNING_TQDM = (
    "GPU available: True (cuda), used: True\n"
    "  | Name  | Type   | Params\n0 | model | ResNet | 11.2 M\n"
    "Epoch 0/9: 100%|██████████| 1000/1000 [03:20<00:00,  5.00it/s, v_num=0, loss=0.812]\n"
    "Epoch 1/9: 100%|██████████| 1000/1000 [03:20<00:00,  5.00it/s, v_num=0, loss=0.512]\n"
    "\rEpoch 2/9:  45%|████▌     | 450/1000 [01:30<01:50,  5.00it/s, v_num=0, loss=0.433]"
)
LIGHTNING_ONE_BASED = "Epoch 3/10:  45%|████▌     | 450/1000 [01:30<01:50,  5.00it/s, loss=0.4]"
COLOURED = (ESC + "[32m" + "train" + ESC + "[0m:  42%|" + ESC + "[36m████▏     " + ESC + "[0m"
            "| 420/1000 [01:23<01:55,  5.02it/s]" + ESC + "]0;title\x07")
HF_EVAL = HF_TRAINER + (
    "\n 60%|██████    | 30/50 [00:06<00:04,  4.95it/s]")
NESTED = (
    "epochs:  30%|███       | 3/10 [15:00<35:00, 300.00s/it]\n"
    "batches:  50%|█████     | 500/1000 [02:30<02:30,  3.33it/s]"
)


@pytest.mark.parametrize("name,text,expect", [
    ("issue-example", "42%|████| 420/1000 [01:23<01:55, 5.02it/s]",
     dict(source="tqdm", fraction=0.42, rate=5.02, eta_seconds=115.0, elapsed_seconds=83.0)),
    ("s-per-it", "  7%|▋         | 7/100 [01:27<19:22, 12.50s/it]",
     dict(fraction=0.07, rate=0.08, eta_seconds=1162.0)),
    ("hours", "gen: 10%|█         | 100/1000 [1:00:00<9:00:00, 36.00s/it]",
     dict(fraction=0.1, eta_seconds=32400.0, elapsed_seconds=3600.0, label="gen")),
    ("unknown-total", "420it [01:23,  5.02it/s]",
     dict(fraction=None, done=420.0, rate=5.02, eta_seconds=None)),
    ("unit-scale", " 21%|##1       | 210/1.00k [00:00<00:01, 678img/s]",
     dict(fraction=0.21, total=1000.0, rate=678.0, unit="img")),
    ("first-frame", "  0%|          | 0/5 [00:00<?, ?it/s]",
     dict(fraction=0.0, rate=None, eta_seconds=None)),
    ("coloured", COLOURED, dict(fraction=0.42, label="train", eta_seconds=115.0)),
    ("cr-overwrites", "\r 10%|█ | 1/10 [00:01<00:09, 1.00it/s]\r 20%|██ | 2/10 [00:02<00:08, 1.00it/s]",
     dict(fraction=0.2, eta_seconds=8.0)),
    ("hf-trainer", HF_TRAINER, dict(fraction=0.4, eta_seconds=180.0, loss=0.6931, epoch=1.0)),
    ("hf-eval-pass", HF_EVAL, dict(fraction=0.4, total=1500.0)),
    ("hf-done", HF_DONE, dict(fraction=1.0, eta_seconds=0.0, loss=0.41)),
    # Lightning counts epochs from 0 and prints the last epoch's number: epoch 2 of 10,
    # 45 % into it -> 24.5 % of the run; 7.55 epochs of 1000 batches at 5 it/s remain.
    ("lightning-zero-based", LIGHTNING_TQDM,
     dict(fraction=0.245, epoch=2, epochs=9, eta_seconds=(550 + 7000) / 5.0)),
    ("lightning-one-based", LIGHTNING_ONE_BASED,
     dict(fraction=(2 + 0.45) / 10, epoch=3, epochs=10)),
    ("nested-bars", NESTED, dict(fraction=0.35, epoch=3.0, epochs=10.0, eta_seconds=(6 * 1000 + 500) / 3.33)),
    ("plain-step", "2024-05-01 12:00:01 | step 120/1000 | loss 2.31 | lr 3e-4",
     dict(source="plain", fraction=0.12, unit="step", eta_seconds=None)),
    ("plain-bracket", "Step [250/1000] loss: 0.52", dict(fraction=0.25)),
    ("plain-iter-of", "iter 50 of 200, loss=1.2", dict(fraction=0.25, unit="iter")),
    ("plain-epoch", "Epoch 3/10, train loss 0.41", dict(fraction=0.3, unit="epoch", epoch=3)),
    ("plain-epoch-and-step", "epoch 2/4 step 50/100 loss 0.3",
     dict(fraction=(1 + 0.5) / 4, epoch=2, epochs=4)),
    ("latest-wins", "step 10/100\nsome log line\nstep 90/100\nvalidating...", dict(fraction=0.9)),
])
def test_parse_progress(name, text, expect):
    p = pg.parse_progress(text)
    assert p is not None, name
    for key, value in expect.items():
        got = getattr(p, key)
        if isinstance(value, float) and got is not None:
            assert got == pytest.approx(value, rel=1e-3), (key, got)
        else:
            assert got == value, (key, got)


@pytest.mark.parametrize("text", [
    "", "loading dataset...\nSaving model checkpoint to out/checkpoint-500",
    "Downloading 100%", "version 1/2 of the file", "step 200/100 (bad)",
    "Epoch 3: nothing here", "ratio 3/4",
])
def test_no_progress_in_plain_logs(text):
    assert pg.parse_progress(text) is None


def test_screen_lines_resolve_overwrites_and_strip_escapes():
    raw = "a\r" + "b" + "\r\n" + ESC + "[1mbold" + ESC + "[0m\n\r24it [00:00]" + ESC + "[A\n\n"
    assert pg.screen_lines(raw) == ["b", "bold", "24it [00:00]"]


@pytest.mark.parametrize("text,seconds", [
    ("01:23", 83.0), ("1:00:00", 3600.0), ("00:00", 0.0), ("?", None), ("", None),
    ("1:02:03:04", 93784.0), ("x:1", None),
])
def test_parse_interval(text, seconds):
    assert pg.parse_interval(text) == seconds


@pytest.mark.parametrize("text,rate,unit", [
    ("5.02it/s", 5.02, "it"), ("12.50s/it", 0.08, "it"), ("1.2kit/s", 1200.0, "it"),
    ("678img/s", 678.0, "img"), ("?it/s", None, "it"), ("3.4MB/s", 3.4e6, "B"), ("", None, "it"),
])
def test_parse_rate(text, rate, unit):
    got_rate, got_unit = pg.parse_rate(text)
    assert got_unit == unit
    assert (got_rate is None and rate is None) or got_rate == pytest.approx(rate)


def test_real_tqdm_output_is_read_within_a_few_percent():
    tqdm = pytest.importorskip("tqdm").tqdm
    clock = [1000.0]
    out = io.StringIO()
    # A fake clock makes tqdm's figures exact: 4 it/s for 400 of 1000 steps.
    bar = tqdm(total=1000, file=out, mininterval=0, miniters=1, desc="train", dynamic_ncols=False,
               ncols=100, smoothing=0)
    bar._time = lambda: clock[0]
    bar.start_t = bar.last_print_t = clock[0]
    for _ in range(400):
        clock[0] += 0.25
        bar.update(1)
    raw = out.getvalue()
    assert "\r" in raw and "400/1000" in raw
    p = pg.parse_progress(raw)
    assert p.fraction == pytest.approx(0.4)
    assert p.rate == pytest.approx(4.0, rel=0.02)
    assert p.eta_seconds == pytest.approx(150.0, abs=2)
    assert p.elapsed_seconds == pytest.approx(100.0, abs=1)
    bar.close()


def test_real_tqdm_unknown_total_and_ascii():
    tqdm = pytest.importorskip("tqdm").tqdm
    out = io.StringIO()
    bar = tqdm(file=out, mininterval=0, miniters=1, ascii=True)
    for _ in range(25):
        bar.update(1)
    p = pg.parse_progress(out.getvalue())
    assert p.fraction is None and p.done == 25.0
    out = io.StringIO()
    bar2 = tqdm(total=10, file=out, mininterval=0, miniters=1, ascii=True, unit="batch")
    bar2.update(3)
    p = pg.parse_progress(out.getvalue())
    assert p.fraction == pytest.approx(0.3) and p.unit == "batch"
    bar.close()
    bar2.close()


def test_history_gives_plain_lines_an_eta():
    h = pg.ProgressHistory(window=600)
    t = 0.0
    p = None
    for step in (100, 200, 300):
        p = pg.with_history(pg.parse_progress("step %d/1000" % step), h, t)
        t += 60.0
    # 100 steps a minute, 700 left -> 7 minutes.
    assert p.eta_seconds == pytest.approx(420.0)
    assert h.eta(t=120.0 + 60.0) == pytest.approx(360.0)


def test_history_restarts_when_progress_goes_back():
    h = pg.ProgressHistory()
    h.add(0, pg.parse_progress("step 800/1000"))
    h.add(10, pg.parse_progress("step 900/1000"))
    h.add(20, pg.parse_progress("step 5/1000"))  # a new run in the same pane
    assert h.eta() is None
    assert len(h.points) == 1


def test_history_forgets_old_points():
    h = pg.ProgressHistory(window=100)
    for t in range(0, 300, 10):
        h.add(float(t), pg.parse_progress("step %d/1000" % (t + 1)))
    assert h.points[0][0] >= 190


@pytest.mark.parametrize("eta,rate,gran,elapsed,cost", [
    (3600, 10.0, "second", 0, 10.0),
    (1800, 10.0, "second", 0, 5.0),
    (90, 60.0, "minute", 0, 2.0),          # 1.5 minutes bill as 2
    (90, 60.0, "minute", 30, 1.0),         # 0:30 -> 2:00: one more started minute
    (600, 6.0, "hour", 0, 6.0),            # a started hour
    (600, 6.0, "hour", 1200, 0.0),         # finishes inside the hour already paid
    (3000, 6.0, "hour", 1200, 6.0),        # runs into the next hour
    (0, 6.0, "hour", 0, 0.0),
    (None, 6.0, "second", 0, None),
    (100, None, "second", 0, None),
])
def test_cost_to_finish(eta, rate, gran, elapsed, cost):
    got = pg.cost_to_finish(eta, rate, gran, elapsed)
    assert (got is None and cost is None) or got == pytest.approx(cost)
