"""A whole run with the synthesized persona: the caller's lines come from an OpenAI-compatible chat model (the
loopback openai-chat emulator with an offline caller model), against the hospital example's backend."""

from __future__ import annotations

import textwrap

from bench.simulation.runner import RunOptions, SimulationRun
from bench.simulation.suite import load_suite
from tests.simulation.conftest import EXAMPLES, load_json
from tests.simulation.fakes import CallerModel, booking_scenario, start_chat_model


async def test_synthesized_caller_books_through_the_hospital_system(tmp_path, monkeypatch):
    monkeypatch.setenv("VOICE_BENCH_HOSPITAL_DB", str(tmp_path / "hospital.sqlite"))
    model = CallerModel(invent_once=True)
    chat = await start_chat_model(model)
    hospital = EXAMPLES / "hospital"
    (tmp_path / "scenario.yaml").write_text(booking_scenario("synthesized-booking"), encoding="utf-8")
    (tmp_path / "run.yaml").write_text(textwrap.dedent(f"""
        scenario_path: scenario.yaml
        persona_path: {hospital / "persona-maria.yaml"}
        data_path: {hospital / "data-maria.yaml"}
        persona_mode: synthesized
        providers:
          persona: {{base_url: "{chat.base_url}", model: caller-model, api_key: sk-offline-caller, usd_per_call: 0.002}}
        endpoint:
          adapter: openai_realtime
          answerer: hospital_system:HospitalAnswerer
          answerer_options: {{database: "${{VOICE_BENCH_HOSPITAL_DB}}"}}
          session_delivery: [context]  # the desk files bookings under the conversation id it reads there
          emulator: {{latency: {{first_token_median_ms: 20, first_token_sigma: 0, audio_pacing: 0}}}}
    """), encoding="utf-8")
    (tmp_path / "hospital_system.py").write_text((hospital / "hospital_system.py").read_text(), encoding="utf-8")
    suite = load_suite(tmp_path / "run.yaml", no_audio=True)
    try:
        result = await SimulationRun(suite, RunOptions(artifacts_dir=tmp_path / "out", trials=1, no_audio=True,
                                                       progress=False)).execute()
    finally:
        await chat.close()
    trial = load_json(tmp_path / "out" / "trial-001" / "trial-report.json")
    assert result.exit_code == 0, trial["critical_failures"]
    assert trial["exit_reason"] == "persona_completion" and trial["outcome"]["appointment_booked"]
    said = [t["content"] for t in trial["evidence"]["turns"][0::2]]
    assert said == ["Hello, I would like to book an appointment at the cardiology department.",
                    "The patient is [NAME].", "Tuesday morning, please.", "Thank you, goodbye."]  # redacted on export
    verdicts = {v["name"]: v for v in trial["verdicts"]}
    assert verdicts["persona_grounded"]["passed"] and not verdicts["persona_grounded"]["critical"]
    transcript = load_json(tmp_path / "out" / "trial-001" / "transcript.json")
    assert all(entry["source"] == "synthesized" for entry in transcript if entry["role"] == "user")
    # five model calls (one line was sent back for a rewrite) at 0.002 each are in the actual cost, with the
    # metered turns of the (priced) system
    assert trial["cost"]["actual_usd"] >= 0.01 - 1e-9
    # the persona model saw the data it must stay within, never the agent's instructions
    assert any("Maria Jansen" in m.utterance or any("Maria Jansen" in h.text for h in m.history)
               for m in model.requests)
