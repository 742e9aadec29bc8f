
import pytest

from tui.core.config import Config, ConfigError, config_path


def write(tmp_path, text):
    p = tmp_path / "config.toml"
    p.write_text(text)
    return str(p)


def test_no_config_at_all_gives_defaults(tmp_path):
    cfg = Config.load(str(tmp_path / "missing.toml"))
    h = cfg.host("anything")
    assert h.rate is None and h.currency == "CNY" and h.granularity == "second"
    assert h.autostop.allowed is False  # nothing is ever stopped unless opted in
    assert cfg.problems == []


def test_host_values_override_defaults(tmp_path):
    cfg = Config.load(write(tmp_path, """
[defaults]
currency = "USD"
budget_session = 20
[hosts.mybox]
rate = 2.58
granularity = "hour"
[hosts.mybox.autostop]
allowed = true
idle_minutes = 45
"""))
    h = cfg.host("mybox")
    assert (h.rate, h.currency, h.granularity, h.budget_session) == (2.58, "USD", "hour", 20)
    assert h.autostop.allowed and h.autostop.idle_minutes == 45
    assert cfg.host("other").rate is None


def test_broken_toml_is_reported_and_never_overwritten(tmp_path):
    path = write(tmp_path, "[hosts.mybox\nrate = = 3\n")
    cfg = Config.load(path)
    assert cfg.broken and "not valid TOML" in cfg.problems[0] and path in cfg.problems[0]
    assert cfg.host("mybox").rate is None
    with pytest.raises(ConfigError, match="will not overwrite"):
        cfg.set_host_values("mybox", rate=1.0)
    assert open(path).read() == "[hosts.mybox\nrate = = 3\n"


def test_wrong_types_are_named_one_by_one(tmp_path):
    cfg = Config.load(write(tmp_path, """
[hosts.b]
rate = "cheap"
granularity = "fortnight"
gpus = true
start = "yesterday"
colour = "blue"
"""))
    h = cfg.host("b")
    assert h.rate is None and h.granularity == "second" and h.gpus is None and h.start is None
    text = "\n".join(cfg.problems)
    for word in ("hosts.b.rate: expected a number", "fortnight", "hosts.b.gpus", "yesterday",
                 "unknown setting 'colour'"):
        assert word in text


def test_rate_entered_in_the_app_is_remembered(tmp_path):
    path = write(tmp_path, "[defaults]\ncurrency = 'USD'\n")
    cfg = Config.load(path)
    cfg.set_host_values("my box", rate=1.5, granularity="minute")
    again = Config.load(path)
    assert again.host("my box").rate == 1.5 and again.host("my box").granularity == "minute"
    assert again.host("my box").currency == "USD"


def test_default_location_follows_the_seam(isolated_dirs):
    assert config_path().startswith(str(isolated_dirs))


@pytest.mark.parametrize("line, word", [
    ("rate = nan", "not a finite number"),
    ("rate = inf", "not a finite number"),
    ("rate = -3", "not between 0"),
    ("rate = 'cheap'", "expected a number"),
    ("rate = true", "expected a number"),
    ("idle_threshold = 250", "not between 0 and 100"),
    ("budget_day = -inf", "not a finite number"),
    ("gpus = -1", "not between 0"),
    ("artifact_paths = [1, 2]", "list of text"),
])
def test_numbers_must_be_finite_and_in_range(tmp_path, line, word):
    cfg = Config.load(write(tmp_path, "[hosts.b]\n%s\n" % line))
    h = cfg.host("b")
    key = line.split()[0]
    assert getattr(h, key) == getattr(Config({}).host("b"), key)  # the default, not the bad value
    assert any(("hosts.b.%s" % key) in p and word in p for p in cfg.problems), cfg.problems


def test_autostop_numbers_are_checked_too(tmp_path):
    cfg = Config.load(write(tmp_path, "[hosts.b.autostop]\nidle_minutes = nan\ngrace_seconds = -5\n"))
    a = cfg.host("b").autostop
    assert a.idle_minutes == 30.0 and a.grace_seconds == 120.0
    assert len([p for p in cfg.problems if "hosts.b.autostop" in p]) == 2


def test_autostop_by_money_and_hung_jobs_are_opt_in_per_host(tmp_path):
    cfg = Config.load(write(tmp_path, "[hosts.b.autostop]\nallowed = true\nat_budget = true\n"
                                      "hung_counts_idle = true\n[hosts.c.autostop]\nat_budget = \"yes\"\n"))
    b, c = cfg.host("b").autostop, cfg.host("c").autostop
    assert b.at_budget is True and b.hung_counts_idle is True
    assert c.at_budget is False and c.hung_counts_idle is False  # a string is not a yes
    assert any("at_budget" in p for p in cfg.problems)
