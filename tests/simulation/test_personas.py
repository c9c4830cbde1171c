"""The simulated callers: the scripted persona's keyword triggers, and the synthesized persona against the loopback
openai-chat emulator (grounded in the data)."""

from __future__ import annotations

import pytest

from bench.simulation.config import ChatProvider, Persona, Scenario, Script
from bench.simulation.llm import ChatClient
from bench.simulation.personas import GoalPersona, Message, ScriptedPersona, SynthesizedPersona, ungrounded_facts
from tests.simulation.fakes import CallerModel, start_chat_model


def _script(**extra) -> Script:  # noqa: ANN003
    return Script.model_validate({
        "turns": [
            {"trigger": "greeting", "response": "I need an appointment.", "keywords": ["Welcome"]},
            {"trigger": "name", "response": "Maria Jansen.", "keywords": ["your name", "patient's name"]},
            {"trigger": "bye", "response": "Bye.", "keywords": ["anything else"]},
        ], **extra})


async def test_scripted_keywords_over_unused_turns_case_insensitive():
    persona = ScriptedPersona(_script())
    line = await persona.next_line("WELCOME to the hospital!", [])
    assert (line.text, line.source, line.script_index) == ("I need an appointment.", "script", 0)
    # a used turn is not matched again; no match → please repeat
    again = await persona.next_line("welcome again", [])
    assert again.source == "repeat" and again.text == "Sorry, could you please repeat that?"
    # word boundaries: "names" does not trigger "your name"... but "your name" does, whatever the case
    assert (await persona.next_line("Tell me your names", [])).source == "repeat"
    assert (await persona.next_line("What is YOUR NAME?", [])).text == "Maria Jansen."
    assert (await persona.next_line("Is there anything else?", [])).text == "Bye."
    assert await persona.next_line("Goodbye", []) is None  # every turn used: script exhaustion
    assert persona.done_reason == "script_exhaustion"


async def test_trigger_without_keywords_opening_and_final_turn():
    script = Script.model_validate({"opening": "Hello there.", "repeat_prompt": "Pardon?", "turns": [
        {"trigger": "booked", "response": "Thanks, goodbye.", "final": True},
        {"trigger": "never said", "response": "unused"}]})
    persona = ScriptedPersona(script)
    assert (await persona.next_line("", [])).source == "opening"
    assert (await persona.next_line("Hmm?", [])).text == "Pardon?"
    assert (await persona.next_line("It is booked.", [])).text == "Thanks, goodbye."
    assert await persona.next_line("Goodbye!", []) is None  # a final turn ends the script


async def test_barge_in_turn_follows_its_turn():
    script = Script.model_validate({"turns": [
        {"response": "Tell me everything.", "keywords": ["hours"]},
        {"response": "Just the evening, please.", "interrupt_at_ms": 800},
        {"response": "Bye.", "keywords": ["evening"]}]})
    persona = ScriptedPersona(script)
    line = await persona.next_line("Our opening hours are...", [])
    barge = persona.barge_in_for(line)
    assert barge is not None and barge.interrupt_at_ms == 800 and barge.text == "Just the evening, please."
    assert persona.barge_in_for(line) is None  # used once
    # the interrupting turn is never chosen by keywords
    assert (await persona.next_line("Tell me everything", [])).source == "repeat"


def test_an_interrupting_turn_must_follow_an_ordinary_one():
    with pytest.raises(ValueError, match="interrupting turn must follow"):
        Script.model_validate({"turns": [{"response": "x", "interrupt_at_ms": 100}]})


def test_ungrounded_facts():
    allowed = "patient Maria Jansen born 1952-03-04 cardiology"
    assert ungrounded_facts("The patient is Maria Jansen, born 1952-03-04.", allowed) == []
    assert ungrounded_facts("My number is 99417 and my doctor is Peter Smith.", allowed) == ["99417", "Peter",
                                                                                              "Smith"]


async def test_synthesized_persona_is_grounded_against_the_chat_emulator():
    model = CallerModel(invent_once=True)
    emulator = await start_chat_model(model)
    client = ChatClient(ChatProvider(base_url=emulator.base_url, model="caller-model", api_key="sk-offline-key"))
    try:
        persona = SynthesizedPersona(client, persona=Persona(name="Sofie Jansen"),
                                     scenario=Scenario(id="booking", description="Book a cardiology appointment"),
                                     data={"patient": {"name": "Maria Jansen"}})
        first = await persona.next_line("", [])
        assert first.text.startswith("Hello, I would like to book") and first.source == "synthesized"
        history = [Message("user", first.text), Message("assistant", "What is the patient's name?")]
        named = await persona.next_line("What is the patient's name?", history)
        # the invented number was sent back once for a rewrite
        assert named.text == "The patient is Maria Jansen." and named.model_calls == 2 and named.ungrounded == []
        system = model.requests[0]
        assert system.utterance == "(the agent has not said anything yet)"
        ended = await persona.next_line("Your appointment is booked.", history)
        assert ended.text == "Thank you, goodbye." and await persona.next_line("Goodbye", history) is None
    finally:
        await client.close()
        await emulator.close()


async def test_goal_persona_static_steps_need_no_model():
    scenario = Scenario.model_validate({"name": "static", "steps": [
        {"goal": "say hi", "static_utterance": "Hi."}, {"goal": "ask", "static_utterance": "What time is it?"}]})
    persona = GoalPersona(scenario, synthesizer=None)
    assert (await persona.next_line("", [])).text == "Hi."
    assert (await persona.next_line("Hello", [])).text == "What time is it?"
    assert await persona.next_line("Noon.", []) is None and persona.done_reason == "goals_completed"
