import pytest

from engine.errors import SettingsError
from engine.run.settings import SamplingSettings


@pytest.mark.parametrize(
    "changes, words",
    [
        ({"temperature": -0.1}, "temperature"),
        ({"temperature": 2.5}, "temperature"),
        ({"temperature": float("nan")}, "temperature"),
        ({"top_p": 0.0}, "top-p"),
        ({"top_p": 1.2}, "top-p"),
        ({"top_k": -1}, "top-k"),
        ({"min_p": 1.0}, "min-p"),
        ({"repetition_penalty": 0.0}, "repetition penalty"),
        ({"max_tokens": 0}, "max tokens"),
        ({"seed": -3}, "seed"),
        ({"stop": ("",)}, "stop"),
        ({"top_n": 0}, "alternatives"),
    ],
)
def test_nonsense_values_are_refused_with_the_setting_named(changes, words):
    with pytest.raises(SettingsError, match=words):
        SamplingSettings(**changes).validate()


def test_defaults_are_valid_and_round_trip():
    s = SamplingSettings(stop=("\n\n",), seed=4, system_prompt="Be brief.")
    assert s.validate() is s
    assert SamplingSettings.from_dict(s.to_dict()) == s
