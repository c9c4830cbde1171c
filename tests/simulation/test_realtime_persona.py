"""The realtime persona: a realtime speech model (the repo's OpenAI Realtime emulator with a persona brain, reached
through the official ``openai`` SDK) plays the caller, the evaluator driving append / commit / response.create; its
audio is what the system under test hears and its transcript the caller's lines in the bundle."""

from __future__ import annotations

import hashlib
import json
import textwrap
from pathlib import Path

import pytest

from adapters.emulators._kit.answerer import BrainAnswer
from adapters.emulators._kit.control import ControlPlane
from adapters.emulators._kit.running import EmulatorSettings, LatencyProfile
from adapters.emulators._kit.speaker import speech_duration_ms
from bench.audio.pcm import tone_pcm16
from bench.simulation.config import Script
from bench.simulation.mixer import whole_frames
from bench.simulation.realtime_persona import ScriptBrain
from tests.simulation.conftest import EXAMPLES, load_json, run_cli
from tests.simulation.fakes import booking_scenario

FAST = {"first_token_median_ms": 10, "first_token_sigma": 0, "first_audio_extra_ms": 5, "token_interval_ms": 0,
        "audio_pacing": 0}
SCRIPT = textwrap.dedent("""
    opening: Hello, I would like to book an appointment at the cardiology department.
    turns:
      - trigger: asks for the patient
        response: The patient is Maria Jansen.
        keywords: [full name, patient's name]
      - trigger: asks for the day
        response: Tuesday morning, please.
        keywords: [which day, prefer]
""")
LINES = ["Hello, I would like to book an appointment at the cardiology department.", "The patient is Maria Jansen.",
         "Tuesday morning, please."]
#: what the exported bundle holds: the same lines, the patient's name redacted (``bench.privacy``)
EXPORTED_LINES = [line.replace("Maria Jansen", "[NAME]") for line in LINES]


@pytest.fixture
def realtime_wiring(monkeypatch):
    """``persona_mode: realtime`` in the trial runner and in validation: the two calls the report asks the
    runner's caller factory and suite.py to make (``realtime_persona.caller_factory`` and
    ``realtime_persona.check_run``)."""
    import importlib.util

    from bench.simulation import realtime_persona, runner, suite

    check_personas = suite._check_personas

    def checked(run_path, run, cells, problems):  # noqa: ANN001, ANN202
        check_personas(run_path, run, cells, problems)
        problems[:] = [p for p in problems if not (p.field == "persona_mode" and "not implemented" in p.message)]
        directories = [run_path.parent] + sorted({c.scenario_file.parent for c in cells} - {run_path.parent})
        problems += realtime_persona.check_run(run, cells, run_path, directories)

    owner = runner.SimulationRun
    if importlib.util.find_spec("bench.simulation.trial") is not None:  # the trial runner (executors)
        from bench.simulation.trial import TrialRunner as owner  # noqa: N813
    caller_factory = owner._caller_factory

    def factory(self, cell):  # noqa: ANN001, ANN202
        if self.run.persona_mode == "realtime" and not cell.scenario.steps:
            directories = getattr(self, "search_dirs", None) or self.suite.search_dirs
            return realtime_persona.caller_factory(self.run, cell, directories)
        return caller_factory(self, cell)

    monkeypatch.setattr(suite, "_check_personas", checked)
    monkeypatch.setattr(owner, "_caller_factory", factory)


def _booking(tmp_path: Path, monkeypatch, persona_block: str, *, endpoint: str = "fake") -> Path:
    monkeypatch.setenv("VOICE_BENCH_HOSPITAL_DB", str(tmp_path / "hospital.sqlite"))
    hospital = EXAMPLES / "hospital"
    (tmp_path / "hospital_system.py").write_text((hospital / "hospital_system.py").read_text(), encoding="utf-8")
    (tmp_path / "script.yaml").write_text(SCRIPT, encoding="utf-8")
    (tmp_path / "scenario.yaml").write_text(booking_scenario("realtime-booking"), encoding="utf-8")
    (tmp_path / "run.yaml").write_text(textwrap.dedent(f"""
        scenario_path: scenario.yaml
        persona_path: {hospital / "persona-maria.yaml"}
        data_path: {hospital / "data-maria.yaml"}
        script_path: script.yaml
        persona_mode: realtime
        speech_provider: tone
        pace_audio: false
        endpoint:
          adapter: {endpoint}
          answerer: hospital_system:HospitalAnswerer
          answerer_options: {{database: "${{VOICE_BENCH_HOSPITAL_DB}}"}}
          session_delivery: [context]
          emulator: {{latency: {json.dumps(FAST)}}}
    """) + textwrap.dedent(persona_block), encoding="utf-8")
    return tmp_path / "run.yaml"


def _persona_events(bundle: Path) -> list[dict]:
    events = [json.loads(line) for line in (bundle / "voice-events.jsonl").read_text().splitlines()]
    return events


def _tone_sha(text: str) -> str:
    """What the emulated realtime model speaks for ``text`` (emulators have no TTS: a tone as long as the words)."""
    return hashlib.sha256(tone_pcm16(speech_duration_ms(text))).hexdigest()


@pytest.mark.parametrize("interface", ["ga", "beta"])  # client.realtime / client.beta.realtime
def test_a_realtime_caller_books_an_appointment_over_three_turns(tmp_path, monkeypatch, realtime_wiring, interface):
    run = _booking(tmp_path, monkeypatch, f"""
        realtime_persona:
          mode: emulated
          interface: {interface}
          voice: coral
          emulator: {{latency: {json.dumps(FAST)}}}
    """)
    out = tmp_path / "out"
    assert run_cli("simulate", "validate", str(run)) == 0
    assert run_cli("simulate", "run", str(run), "--artifacts-dir", str(out), "--no-progress", "--trials", "1") == 0
    bundle = out / "trial-001"
    trial = load_json(bundle / "trial-report.json")
    assert trial["exit_reason"] == "persona_completion" and trial["passed"]
    assert trial["outcome"]["appointment_booked"] and trial["outcome"]["patient"] == "[NAME]"

    # the bundle transcript holds the persona's lines, from the realtime persona
    transcript = load_json(bundle / "transcript.json")
    callers = [e for e in transcript if e["role"] == "user"]
    assert [e["content"] for e in callers] == EXPORTED_LINES
    assert all(e["source"] == "realtime" for e in callers)
    assert "The patient is [NAME]." in (bundle / "transcript.md").read_text()

    events = _persona_events(bundle)
    lines = [e for e in events if e["event_type"] == "persona.line"]
    sent = [e for e in events if e["event_type"] == "user.audio.sent"]
    assert len(lines) == len(sent) == 3
    # the protocol the evaluator drove on the persona's model: the caller opens (nothing heard yet: a response only);
    # then per turn the agent's reply audio appended, committed, and a response asked for
    first, *later = [e["attributes"]["protocol"] for e in lines]
    assert first == ["response.create"]
    for protocol in later:
        appends = [p for p in protocol if p == "input_audio_buffer.append"]
        assert appends and protocol == appends + ["input_audio_buffer.commit", "response.create"]
    # the caller's audio is the persona model's speech (not the harness's tone TTS): the emulated model speaks a
    # tone as long as the words, and exactly those bytes went to the system under test
    for line, audio, said in zip(lines, sent, LINES, strict=True):  # the exported text is redacted: the said line
        attributes = line["attributes"]
        assert attributes["audio_sha256"] == _tone_sha(said)
        spoken = tone_pcm16(speech_duration_ms(said))
        assert attributes["audio_bytes"] == len(spoken)
        # the driver pads speech to whole 20 ms pump frames (the open line carries on from there)
        assert audio["pcm"]["byte_count"] == len(whole_frames(spoken))
    # the system under test heard the persona's audio as binary frames, committed and answered each turn
    raw = load_json(bundle / "raw-endpoint-events.json")  # the endpoint's own frames
    assert sum(1 for r in raw if r.get("frame", {}).get("type") == "response.done") >= 3
    assert any("binary_bytes" in r for r in raw if r["direction"] == "sent")


def test_a_realtime_caller_against_an_emulated_vendor_with_server_vad(tmp_path, monkeypatch, realtime_wiring):
    # the OpenAI Realtime vendor emulator as the system under test: the persona's audio goes through the paced
    # full-duplex pump and the vendor's own VAD ends each of the caller's turns
    run = _booking(tmp_path, monkeypatch, f"""
        realtime_persona:
          mode: emulated
          emulator: {{latency: {json.dumps(FAST)}}}
    """, endpoint="openai_realtime")
    out = tmp_path / "out"
    assert run_cli("simulate", "run", str(run), "--artifacts-dir", str(out), "--no-progress", "--trials", "1") == 0
    bundle = out / "trial-001"
    trial = load_json(bundle / "trial-report.json")
    assert trial["input_mode"] == "audio" and trial["exit_reason"] == "persona_completion"
    assert trial["outcome"]["appointment_booked"]
    assert [e["content"] for e in load_json(bundle / "transcript.json") if e["role"] == "user"] == EXPORTED_LINES
    lines = [e for e in _persona_events(bundle) if e["event_type"] == "persona.line"]
    assert all(e["attributes"]["audio_sha256"] == _tone_sha(said) for e, said in zip(lines, LINES, strict=True))


def test_a_realtime_caller_reads_a_text_only_agent(tmp_path, monkeypatch, realtime_wiring):
    # the in-house stack in text turns: the agent's words reach the persona's model as a text item (no audio to
    # append), and the caller's lines still come from the model
    run = _booking(tmp_path, monkeypatch, f"""
        realtime_persona:
          mode: emulated
          emulator: {{latency: {json.dumps(FAST)}}}
    """)
    text = run.read_text()
    start = text.index("endpoint:")
    end = text.index("realtime_persona:")
    run.write_text(text[:start] + textwrap.dedent("""
        endpoint:
          id: inhouse
          adapter: inhouse
          mode: local
          settings:
            orchestrator: hospital_system:HospitalStack
            orchestrator_options: {database: "${VOICE_BENCH_HOSPITAL_DB}"}
            speech_input: null
    """) + text[end:])
    out = tmp_path / "out"
    assert run_cli("simulate", "run", str(run), "--artifacts-dir", str(out), "--no-progress", "--trials", "1") == 0
    bundle = out / "trial-001"
    trial = load_json(bundle / "trial-report.json")
    assert trial["input_mode"] == "text" and trial["outcome"]["appointment_booked"]
    assert [e["content"] for e in load_json(bundle / "transcript.json") if e["role"] == "user"] == EXPORTED_LINES
    protocols = [e["attributes"]["protocol"] for e in _persona_events(bundle) if e["event_type"] == "persona.line"]
    assert protocols == [["response.create"]] + [["conversation.item.create", "response.create"]] * 2


class InventingBrain(ScriptBrain):
    """A persona brain that names a reference number once (the grounding check must send it back)."""

    invented = False

    def answer(self, request):  # noqa: ANN001, ANN201
        answer = super().answer(request)
        if answer.text.startswith("The patient") and not InventingBrain.invented:
            InventingBrain.invented = True
            return BrainAnswer(text="The patient is Maria Jansen, reference 88231.")
        return answer


async def _persona_model(script: str, brain_class=ScriptBrain):  # noqa: ANN001, ANN202
    """A realtime model started by the test (a "live" endpoint on loopback) that records every frame."""
    from adapters.emulators.openai_realtime import start

    settings = EmulatorSettings(latency=LatencyProfile(**FAST))
    brain = brain_class(Script.model_validate(__import__("yaml").safe_load(script)))
    return await start(settings, control=ControlPlane(), answerer=brain, options={"record": True})


async def test_a_live_persona_endpoint_gets_the_key_and_the_canary_stays_out_of_the_bundle(tmp_path, monkeypatch,
                                                                                          realtime_wiring):
    from bench.simulation.runner import RunOptions, SimulationRun
    from bench.simulation.suite import load_suite

    canary = "canary0realtime0persona0key"
    monkeypatch.setenv("RT_PERSONA_CANARY", canary)
    InventingBrain.invented = False
    model = await _persona_model(SCRIPT, InventingBrain)
    out = tmp_path / "out"
    try:
        run = _booking(tmp_path, monkeypatch, f"""
            realtime_persona:
              mode: live
              endpoint: {model.url}/v1
              model: gpt-realtime
              voice: marin
              api_key: ${{RT_PERSONA_CANARY}}
        """)
        suite = load_suite(run)
        result = await SimulationRun(suite, RunOptions(artifacts_dir=out, trials=1, progress=False)).execute()
    finally:
        await model.close()
    assert result.exit_code == 0, load_json(out / "trial-001" / "trial-report.json")["failure_reason"]
    received = [e["event"]["type"] for e in model.log if e["dir"] == "recv"]
    # one session: configured once, then the caller opens, then per turn append..., commit, response.create; the
    # invented reference number was sent back once for a rewrite (a text item and another response); every frame
    # reached the model with the key as its bearer (the loopback model refuses a socket without one)
    assert received[0] == "session.update"
    session = next(e["event"]["session"] for e in model.log if e["dir"] == "recv")
    assert session["audio"]["input"]["turn_detection"] is None and session["audio"]["output"]["voice"] == "marin"
    assert "Maria Jansen" in session["instructions"] and "[END]" in session["instructions"]
    compact = [t for i, t in enumerate(received) if not (t == "input_audio_buffer.append" and i > 0
                                                         and received[i - 1] == t)]
    assert compact == ["session.update", "response.create",  # the caller opens
                       "input_audio_buffer.append", "input_audio_buffer.commit", "response.create",  # the name
                       "conversation.item.create", "response.create",  # the rewrite
                       "input_audio_buffer.append", "input_audio_buffer.commit", "response.create",  # the day
                       # the booking heard, the model answers [END]: the conversation is over
                       "input_audio_buffer.append", "input_audio_buffer.commit", "response.create"]
    bundle = out / "trial-001"
    transcript = load_json(bundle / "transcript.json")
    said = [e["content"] for e in transcript if e["role"] == "user"]
    assert said == EXPORTED_LINES  # the rewrite replaced the ungrounded line
    line = next(json.loads(x) for x in (bundle / "voice-events.jsonl").read_text().splitlines()
                if '"persona.line"' in x and "[NAME]" in x)
    assert line["attributes"]["model_calls"] == 2 and "ungrounded" not in line["attributes"]
    # the key reached the endpoint (the emulator accepts any bearer) and no written file holds it
    for path in out.rglob("*"):
        if path.is_file():
            assert canary.encode() not in path.read_bytes(), path


def test_a_live_persona_without_a_key_fails_validation_with_exit_2(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    run = _booking(tmp_path, monkeypatch, """
        realtime_persona:
          mode: live
          model: gpt-realtime
          voice: marin
    """)
    assert run_cli("simulate", "validate", str(run)) == 2
    err = capsys.readouterr().err
    assert "realtime_persona" in err and "OPENAI_API_KEY" in err
    # and the key written as a reference to an unset variable
    text = run.read_text().replace("voice: marin", "voice: marin\n  api_key: ${OPENAI_API_KEY}")
    run.write_text(text)
    assert run_cli("simulate", "validate", str(run)) == 2
    assert "OPENAI_API_KEY is not set" in capsys.readouterr().err


@pytest.mark.parametrize(("block", "field", "message"), [
    ("realtime_persona: {mode: emulated, voice: robot}", "realtime_persona.voice", "unknown realtime voice"),
    ("realtime_persona: {mode: live, endpoint: 'ftp://x', api_key: k-123456}", "realtime_persona.endpoint",
     "not a WebSocket base URL"),
    ("realtime_persona: {mode: live, model: 'bad model', api_key: k-123456}", "realtime_persona.model", "pattern"),
    ("realtime_persona: {mode: emulated, endpoint: 'wss://api.openai.com/v1'}", "realtime_persona",
     "remove endpoint"),
    ("", "-", "needs realtime_persona"),
])
def test_realtime_persona_settings_are_validated(tmp_path, monkeypatch, capsys, block, field, message):
    run = _booking(tmp_path, monkeypatch, "")
    run.write_text(run.read_text() + block + "\n")
    assert run_cli("simulate", "validate", str(run)) == 2
    err = capsys.readouterr().err
    assert field in err and message in err, err


def test_the_default_brain_needs_a_script(tmp_path, monkeypatch, capsys, realtime_wiring):
    run = _booking(tmp_path, monkeypatch, "realtime_persona: {mode: emulated}\n")
    run.write_text(run.read_text().replace("script_path: script.yaml\n", ""))
    assert run_cli("simulate", "validate", str(run)) == 2
    err = capsys.readouterr().err
    assert "script_path" in err and "realtime persona" in err
    run.write_text(run.read_text().replace("{mode: emulated}", "{mode: emulated, brain: 'nowhere_module:Brain'}"))
    assert run_cli("simulate", "validate", str(run)) == 2
    assert "realtime_persona: brain" in capsys.readouterr().err


def _request(utterance: str, history: list[tuple[str, str]]):  # noqa: ANN202
    from adapters.emulators._kit.answerer import BrainRequest, HistoryTurn

    return BrainRequest(utterance=utterance, history=[HistoryTurn(role=r, text=t) for r, t in history])


def test_the_script_brain_plays_the_script_from_its_own_history():
    script = Script.model_validate({**__import__("yaml").safe_load(SCRIPT), "turns": [
        {"response": "The patient is Maria Jansen.", "keywords": ["full name"]},
        {"response": "Thank you, goodbye.", "keywords": ["booked"], "final": True},
        {"response": "Tuesday morning, please.", "keywords": ["which day"]}]})
    brain = ScriptBrain(script)
    opening = script.opening
    assert brain.answer(_request("", [])).text == opening
    # keywords over unused turns, case-insensitive; no match: please repeat
    said = [("assistant", opening)]
    assert brain.answer(_request("Your FULL NAME please", said)).text == "The patient is Maria Jansen."
    said += [("user", "Your full name please"), ("assistant", "The patient is Maria Jansen.")]
    assert brain.answer(_request("What is your full name?", said)).text == script.repeat_prompt
    # nothing heard (no recognizer on a live loopback): the next unused turn in order
    assert brain.answer(_request("", said)).text == "Thank you, goodbye."
    # a final turn said: the model answers the end marker
    said += [("user", "It is booked."), ("assistant", "Thank you, goodbye.")]
    assert brain.answer(_request("Goodbye!", said)).text == "[END]"
    # a rewrite request decides again on what was heard before the rejected line
    rejected = said[:2] + [("user", "Your full name please"), ("assistant", "The patient is Maria, 12345.")]
    assert brain.answer(_request("(Rewrite your last line without 12345: ...)", rejected)).text == \
        "The patient is Maria Jansen."


def test_a_failing_persona_model_fails_the_trial_to_execute(tmp_path, monkeypatch, realtime_wiring):
    # every response of the persona's model is an error: the trial did not execute (exit 4), the reason names the
    # persona, never the system under test
    run = _booking(tmp_path, monkeypatch, f"""
        realtime_persona:
          mode: emulated
          emulator: {{latency: {json.dumps(FAST)}, faults: {{rate: 1.0, kinds: [error_event]}}}}
    """)
    out = tmp_path / "out"
    assert run_cli("simulate", "run", str(run), "--artifacts-dir", str(out), "--no-progress", "--trials", "1") == 4
    trial = load_json(out / "trial-001" / "trial-report.json")
    assert trial["execution_status"] == "failed" and trial["failure_code"] == "persona"
    assert "realtime persona" in trial["failure_reason"] and "server_error" in trial["failure_reason"]
