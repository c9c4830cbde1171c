"""The audio loop offline over an English subset end to end (espeak-ng → pocketsphinx → the in-house stack), WER/CER
against known values, seeded noise at a measured SNR, caching, and live engines without keys."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from bench.audio.noise import mix_noise
from bench.audioloop.loop import _error_rates
from bench.cli import main

CONFIG = {
    "dataset": "datasets/voice_golden_expanded.json",
    "trials": 1,
    "systems": [{"id": "inhouse", "adapter": "inhouse", "role": "reference",
                 "options": {"orchestrator": "adapters.inhouse.reference:ReferenceVoiceStack"}}],
}


def _config(tmp_path: Path) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({**CONFIG, "store": str(tmp_path / "bench.sqlite"),
                                    "reports_dir": str(tmp_path / "reports")}), encoding="utf-8")
    return path


def test_error_rates_against_known_values() -> None:
    wer, cer = _error_rates(["Where is the dialysis unit?"], ["where is dialysis a unit"])
    assert wer == pytest.approx(2 / 5)  # one deletion ("the") and one insertion ("a") over five words
    assert 0 < cer < wer
    assert _error_rates(["abcd"], ["abxd"])[1] == pytest.approx(1 / 4)
    assert _error_rates(["Hallo, daar!"], ["hallo daar"]) == (0.0, 0.0)  # case and punctuation do not count
    assert _error_rates(["twee woorden"], [""])[0] == 1.0


def test_noise_is_seeded_and_at_the_asked_ratio() -> None:
    rng = np.random.default_rng(1)
    speech = (np.sin(np.arange(24000) / 8) * 6000 + rng.normal(0, 10, 24000)).astype("<i2").tobytes()
    noisy = mix_noise(speech, 10.0, "0|VGX-1")
    assert noisy == mix_noise(speech, 10.0, "0|VGX-1") and noisy != mix_noise(speech, 10.0, "1|VGX-1")
    clean = np.frombuffer(speech, "<i2").astype(float)
    noise = np.frombuffer(noisy, "<i2").astype(float) - clean
    assert 10 * np.log10(np.mean(clean**2) / np.mean(noise**2)) == pytest.approx(10.0, abs=0.3)


def test_the_loop_runs_offline_end_to_end_and_a_rerun_synthesizes_nothing(tmp_path, capsys) -> None:
    config = _config(tmp_path)
    out = tmp_path / "loop"
    argv = ["audio-loop", "--config", str(config), "--languages", "en", "--limit", "4", "--out", str(out),
            "--cache-dir", str(tmp_path / "cache"), "--no-progress"]
    assert main(argv) == 0, capsys.readouterr().err
    printed = capsys.readouterr().out
    assert "speech: 4 synthesized, 0 cached; transcripts: 4 new, 0 cached" in printed
    result = json.loads((out / "audio-loop.json").read_text(encoding="utf-8"))
    assert (result["tts"], result["stt"], result["live"]) == ("espeak-ng", "pocketsphinx", False)
    [english] = result["error_rates"]
    assert english["language"] == "en" and english["n"] == 4 and english["cer"] >= 0
    entries = result["entries"]
    assert len(entries) == 4 and all(e["language"] == "en" for e in entries)
    expected_wer, _ = _error_rates([e["question"] for e in entries], [e["transcript"] for e in entries])
    assert english["wer"] == pytest.approx(expected_wer)
    [system] = result["systems"]
    assert system["system_id"] == "inhouse" and system["n"] == 4
    assert system["clean_pass_rate"] is not None and system["heard_pass_rate"] is not None
    assert system["change"] == pytest.approx(system["heard_pass_rate"] - system["clean_pass_rate"])
    assert system["flipped_to_fail"] + system["flipped_to_pass"] == len(result["flips"])
    heard = json.loads((out / "golden.heard.json").read_text(encoding="utf-8"))
    assert [e["phone_question"] for e in heard["entries"]] == [e["transcript"] or "..." for e in entries]
    assert "## Recognition error per language" in (out / "audio-loop.md").read_text(encoding="utf-8")

    assert main(argv) == 0
    assert "speech: 0 synthesized, 4 cached; transcripts: 0 new, 4 cached" in capsys.readouterr().out
    again = json.loads((out / "audio-loop.json").read_text(encoding="utf-8"))
    assert [e["transcript"] for e in again["entries"]] == [e["transcript"] for e in entries]


def test_live_engines_without_keys_and_languages_without_a_model_are_exit_2(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.delenv("DEEPGRAM_API_KEY", raising=False)
    monkeypatch.delenv("ELEVENLABS_API_KEY", raising=False)
    config = _config(tmp_path)
    base = ["audio-loop", "--config", str(config), "--out", str(tmp_path / "o"), "--limit", "2"]
    assert main([*base, "--stt", "deepgram"]) == 2
    assert "DEEPGRAM_API_KEY" in capsys.readouterr().err
    assert main([*base, "--tts", "elevenlabs"]) == 2
    assert "ELEVENLABS_API_KEY" in capsys.readouterr().err
    assert main([*base, "--languages", "nl"]) == 2
    assert "pocketsphinx has no model for nl" in capsys.readouterr().err
    assert not (tmp_path / "bench.sqlite").exists() or not (tmp_path / "o" / "audio-loop.json").exists()


def test_the_loop_reports_the_pass_rate_change_per_impairment_profile(tmp_path, capsys) -> None:
    config = _config(tmp_path)
    out = tmp_path / "loop"
    argv = ["audio-loop", "--config", str(config), "--languages", "en", "--limit", "2", "--out", str(out),
            "--cache-dir", str(tmp_path / "cache"), "--no-progress", "--impairment", "pstn,speakerphone",
            "--seed", "7"]
    assert main(argv) == 0, capsys.readouterr().err
    printed = capsys.readouterr().out
    assert "impairment pstn: inhouse: pass rate" in printed and "impairment speakerphone: inhouse" in printed
    result = json.loads((out / "audio-loop.json").read_text(encoding="utf-8"))
    assert [p["profile"] for p in result["profiles"]] == ["pstn", "speakerphone"]
    for outcome in result["profiles"]:
        [system] = outcome["systems"]
        assert system["n"] == 2 and system["clean_pass_rate"] is not None and system["heard_pass_rate"] is not None
        assert system["change"] == pytest.approx(system["heard_pass_rate"] - system["clean_pass_rate"])
        assert outcome["heard_run_id"] not in (result["heard_run_id"], result["clean_run_id"])
        assert {r["profile"] for r in outcome["impairment"].values()} == {outcome["profile"]}
    assert (out / "golden.heard.pstn.json").exists()
    assert "## Pass rate per impairment profile" in (out / "audio-loop.md").read_text(encoding="utf-8")
    # seeded: the same seed gives the same audio, so the same transcripts
    first = json.loads((out / "audio-loop.json").read_text(encoding="utf-8"))["profiles"][0]["impairment"]
    assert main(argv) == 0
    capsys.readouterr()
    assert json.loads((out / "audio-loop.json").read_text(encoding="utf-8"))["profiles"][0]["impairment"] == first


def test_an_unknown_impairment_profile_is_exit_2(tmp_path, capsys) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["audio-loop", "--config", str(_config(tmp_path)), "--impairment", "tin-can"])
    assert exited.value.code == 2 and "tin-can" in capsys.readouterr().err


def test_the_heard_subset_of_a_suite_manifest_takes_entries_from_every_member(tmp_path) -> None:
    from bench.audioloop.loop import _write_golden
    from bench.dataset import validate_files
    from bench.paths import resolve_input

    suite = validate_files([resolve_input("datasets/golden_suite.json")])[0]
    first_of_each = {}
    for entry in suite.entries:
        first_of_each.setdefault(entry.id.split("-")[0], entry.id)
    chosen = {entry_id: f"heard {entry_id}" for entry_id in list(first_of_each.values())[:3]}
    assert len(chosen) >= 2, "the suite's members should use different id prefixes"
    subset = _write_golden(tmp_path / "golden.heard.json", suite, chosen)
    assert {e.id: e.phone_question for e in subset.entries} == chosen
    assert subset.schema_version == suite.schema_version
