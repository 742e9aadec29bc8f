import pytest

from tui.core.config import HostConfig
from tui.core.providers import detect, resolve


@pytest.mark.parametrize("facts, key", [
    ({"env": {"RUNPOD_POD_ID": "abc"}, "paths": ["/workspace"]}, "runpod"),
    ({"env": {"CONTAINER_ID": "123", "VAST_CONTAINERLABEL": "C.123"}}, "vast"),
    ({"paths": ["/root/autodl-tmp", "/root/autodl-fs"]}, "autodl"),
    ({"paths": ["/lambda/nfs"]}, "lambda"),
    ({"dmi_vendor": "Amazon EC2"}, "cloud"),
    ({"dmi_vendor": "Google"}, "cloud"),
    ({}, "unknown"),
])
def test_detect(facts, key):
    assert detect(facts) == key


def test_config_overrides_the_preset():
    cfg = HostConfig(release_command="my-stop", persistent_paths=["/data"])
    p = resolve({"env": {"RUNPOD_POD_ID": "x"}}, cfg)
    assert p.name == "RunPod" and p.release_command == "my-stop" and p.persistent_paths == ["/data"]
    assert resolve({}, HostConfig(provider="autodl")).release_command == "shutdown -h now"
    assert resolve({}, HostConfig()).release_command is None  # unknown: nothing is guessed
