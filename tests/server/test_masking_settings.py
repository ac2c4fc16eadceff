"""Masking as a session setting, without a server: how the preset, the config's defaults
and a session's own settings resolve, and the AsyncMemory each resolution gets (the one the
HTTP routes and ``contextfold worker --config`` fold with)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from contextfold.errors import ConfigError
from contextfold.masking import Masking
from contextfold.server.catalog import open_catalog
from contextfold.server.config import ServerConfig, load_config
from contextfold.server.memories import SessionMemories
from contextfold.server.session_settings import MaskingSettings, SessionSettings, SettingsPatch
from contextfold.stores import open_store


def patch(**fields: object) -> SettingsPatch:
    return SettingsPatch.model_validate(fields)


def test_masking_settings_defaults_are_the_librarys() -> None:
    library, http = Masking(), MaskingSettings().masking()
    assert http == library
    assert MaskingSettings(fact_chars=200, exclude_tools=("b", "a")).masking() == Masking(
        fact_chars=200, exclude_tools=frozenset({"a", "b"}))


def test_left_out_masking_follows_the_preset_through_overlays() -> None:
    plain = SessionSettings()
    assert plain.masking is None
    agent = plain.overlay(patch(preset="agent"))
    assert agent.masking == MaskingSettings()
    assert agent.overlay(patch(preset="conversation")).masking is None
    assert plain.overlay(patch(preset="agent", masking=False)).masking is None
    assert plain.overlay(patch(preset="agent", masking=None)).masking is None
    assert plain.overlay(patch(masking=True)).masking == MaskingSettings()
    # defaults that set masking keep it whatever the session's preset
    chosen = SessionSettings.model_validate({"masking": {"keep": 1}})
    assert chosen.overlay(patch(preset="agent")).masking == MaskingSettings(keep=1)
    assert chosen.overlay(patch(preset="character")).masking == MaskingSettings(keep=1)
    off = SessionSettings.model_validate({"preset": "agent", "masking": False})
    assert off.masking is None and off.overlay(patch(keep_last=4)).masking is None
    # an agent default with masking left out: a session's preset decides
    by_preset = SessionSettings.model_validate({"preset": "agent"})
    assert by_preset.masking == MaskingSettings()
    assert by_preset.overlay(patch(preset="conversation")).masking is None


ABSENT = object()
presets = st.sampled_from(["conversation", "agent", "character"])
options = st.fixed_dictionaries({}, optional={
    "keep": st.integers(0, 20), "trigger_tokens": st.none() | st.integers(0, 10_000),
    "exclude_tools": st.lists(st.sampled_from(["a", "b", "get_user"]), max_size=3),
    "keep_call_args": st.booleans(), "fact_chars": st.none() | st.integers(40, 2000)})


@given(default_preset=presets, default_masking=st.just(ABSENT) | st.none() | options,
       preset=st.just(ABSENT) | presets,
       masking=st.just(ABSENT) | st.none() | st.booleans() | options)
def test_masking_resolves_by_one_rule_and_survives_the_catalog(
    default_preset: str, default_masking: object, preset: object, masking: object
) -> None:
    """The session's masking if it set one, else the defaults' if they set one, else on
    exactly for the agent preset; the same after the patch is stored and read back."""
    defaults_raw: dict[str, object] = {"preset": default_preset}
    if default_masking is not ABSENT:
        defaults_raw["masking"] = default_masking
    raw = {k: v for k, v in {"preset": preset, "masking": masking}.items() if v is not ABSENT}
    defaults = SessionSettings.model_validate(defaults_raw)
    effective = defaults.overlay(SettingsPatch.model_validate(raw))
    chosen = masking if masking is not ABSENT else default_masking
    if chosen is ABSENT:
        agent = (preset if preset is not ABSENT else default_preset) == "agent"
        expected = MaskingSettings() if agent else None
    elif chosen is None or chosen is False:
        expected = None
    else:
        expected = MaskingSettings.model_validate({} if chosen is True else chosen)
    assert effective.masking == expected
    stored = json.loads(json.dumps(SettingsPatch.model_validate(raw).stored()))
    assert defaults.overlay(SettingsPatch.model_validate(stored)) == effective


def test_stored_patch_keeps_an_explicit_off() -> None:
    assert patch(masking=None).stored() == {"masking": None}
    assert patch(masking=False).stored() == {"masking": None}
    assert patch(budget=900).stored() == {"budget": 900}
    again = SettingsPatch.model_validate(json.loads(json.dumps(patch(masking=None).stored())))
    assert SessionSettings(preset="agent").overlay(again).masking is None


def test_config_file_defaults_take_masking(tmp_path: Path) -> None:
    path = tmp_path / "server.yaml"
    path.write_text("defaults:\n  preset: agent\n  masking:\n    keep: 2\n"
                    "    exclude_tools: [get_user]\n")
    defaults = load_config(path).defaults
    assert defaults.masking == MaskingSettings(keep=2, exclude_tools=("get_user",))
    path.write_text("defaults:\n  preset: agent\n  masking: false\n")
    assert load_config(path).defaults.masking is None
    path.write_text("defaults:\n  masking:\n    keep: -1\n")
    with pytest.raises(ConfigError, match=r"server\.yaml: defaults\.masking\.keep"):
        load_config(path)


def test_each_masking_gets_its_engine_and_the_worker_path_too(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'cf.db'}"
    store, catalog = open_store(url), open_catalog(url)
    memories = SessionMemories(ServerConfig(), store, catalog)
    agent = SessionSettings().overlay(patch(preset="agent"))
    narrow = SessionSettings().overlay(patch(masking={"keep": 1, "trigger_tokens": 0}))
    assert memories.memory(SessionSettings()).masking is None
    assert memories.memory(agent).masking == Masking()
    assert memories.memory(narrow).masking == Masking(keep=1, trigger_tokens=0)
    assert memories.memory(agent) is memories.memory(
        SessionSettings().overlay(patch(preset="agent")))
    assert memories.memory(agent) is not memories.memory(narrow)

    async def stored_sessions() -> None:
        await catalog.put_settings("t", "s1", json.dumps(patch(masking={"keep": 5}).stored()))
        await catalog.put_settings("t", "s2", json.dumps(
            patch(preset="agent", masking=None).stored()))
        assert (await memories.for_store_id("t/s1")).masking == Masking(keep=5)
        assert (await memories.for_store_id("t/s2")).masking is None

    try:
        asyncio.run(stored_sessions())
    finally:
        catalog.close()
