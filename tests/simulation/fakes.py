"""Offline stand-ins for the chat models of a simulation, served by the loopback openai-chat emulator.

The emulator hands each request's last user message to an answerer (``adapters.emulators._kit.answerer``); these
answerers read the harness's own prompts and reply as a caller model or a judge would, deterministically:

* ``CallerModel`` — the synthesized persona's model: answers what the agent asked from a fixed caller's facts; with
  ``invent_once`` its first answer names a number that is in no data (the grounding check must send it back).
* ``JudgeModel`` — the judge: binary criteria pass unless the criteria contain ``FAIL_MARK``; built-in evaluators
  score 4; steps and expectations are all "Met"; naturalness factors are 4 for every turn.
"""

from __future__ import annotations

import json
import re
import textwrap

from adapters.emulators._kit.answerer import BrainAnswer, BrainProfile, BrainRequest
from adapters.emulators._kit.control import ControlPlane
from adapters.emulators._kit.running import EmulatorSettings, LatencyProfile

FAIL_MARK = "MUST-FAIL"


class CallerModel:
    def __init__(self, *, invent_once: bool = False):
        self.profile = BrainProfile()
        self.invent_once = invent_once
        self.requests: list[BrainRequest] = []

    def answer(self, request: BrainRequest) -> BrainAnswer:
        self.requests.append(request)
        said = request.utterance.lower()
        if said.startswith("(rewrite"):
            return BrainAnswer(text="The patient is Maria Jansen.")
        if "booked" in said or "goodbye" in said:
            return BrainAnswer(text="Thank you, goodbye. [END]")
        if "name" in said:
            if self.invent_once:
                self.invent_once = False
                return BrainAnswer(text="The patient is Maria Jansen, her number is 99417.")
            return BrainAnswer(text="The patient is Maria Jansen.")
        if "day" in said:
            return BrainAnswer(text="Tuesday morning, please.")
        return BrainAnswer(text="Hello, I would like to book an appointment at the cardiology department.")


class JudgeModel:
    def __init__(self) -> None:
        self.profile = BrainProfile()
        self.requests: list[str] = []

    def answer(self, request: BrainRequest) -> BrainAnswer:
        text = request.utterance
        self.requests.append(text)
        if text.startswith("Criteria:"):
            label = "fail" if FAIL_MARK in text else "pass"
            return BrainAnswer(text=json.dumps({"label": label, "reason": f"offline judge: {label}"}))
        if text.startswith("Dimension:"):
            return BrainAnswer(text=json.dumps({"score": 4, "reason": "offline judge"}))
        if text.startswith("Steps:"):
            steps = re.findall(r"^step (\d+):", text, flags=re.MULTILINE)
            expectations = re.findall(r"^expectation (\d+):", text, flags=re.MULTILINE)
            return BrainAnswer(text=json.dumps({
                "steps": [{"index": int(n), "status": "Met", "justification": "offline"} for n in steps],
                "expectations": [{"index": int(n), "status": "Met", "justification": "offline"}
                                 for n in expectations]}))
        if text.startswith("Turn factors:"):
            factors = [f.strip() for f in text.splitlines()[0].removeprefix("Turn factors:").split(",")]
            conversation = [f.strip() for f in text.splitlines()[1].removeprefix("Conversation factors:").split(",")]
            turns = sorted({int(n) for n in re.findall(r"^\[turn (\d+)\]", text, flags=re.MULTILINE)})
            return BrainAnswer(text="```json\n" + json.dumps({
                "turns": [{"turn": t, "factors": {**{f: 4 for f in factors}, "perceivedLatency": 5},
                           "justification": "offline"} for t in turns],
                "conversation_factors": {f: 3 for f in conversation}, "summary": "offline"}) + "\n```")
        return BrainAnswer(text="{}")


async def start_chat_model(answerer, *, faults: dict | None = None):  # noqa: ANN001, ANN201
    """The openai-chat emulator with ``answerer``, fast; returns the running emulator (``.base_url``)."""
    from adapters.emulators._kit.faults import FaultPlan
    from adapters.emulators.openai_chat import start

    settings = EmulatorSettings(latency=LatencyProfile(first_token_median_ms=5, first_token_sigma=0,
                                                       token_interval_ms=0, first_audio_extra_ms=0),
                                faults=FaultPlan(**(faults or {})))
    return await start(settings, control=ControlPlane(), answerer=answerer, options={})


def booking_scenario(scenario_id: str) -> str:
    """A hospital scenario YAML: book a cardiology appointment for Maria Jansen, judged by the booking probe."""
    return textwrap.dedent(f"""
        id: {scenario_id}
        description: Book a cardiology appointment for Maria Jansen
        expected_topics: [appointment booked]
        conversation: {{max_turns: 6, completion_intents: []}}
        eval_spec:
          expected_exit: persona_completion
          outcome_spec: {{appointment_booked: true, patient: Maria Jansen}}
          outcome_probe:
            class: hospital_system:BookingProbe
            settings: {{database: "${{VOICE_BENCH_HOSPITAL_DB}}"}}
    """)


#: a two-turn scenario and script: the caller asks for the visiting hours, then says goodbye
VISITING_HOURS_SCENARIO = """
id: visiting-hours
knowledge: [Visiting hours are from two in the afternoon to eight in the evening every day.]
conversation: {max_turns: 2, completion_intents: []}
"""
VISITING_HOURS_SCRIPT = """
opening: When are the visiting hours?
turns:
  - response: Thank you, goodbye.
    keywords: [visit]
    final: true
"""
