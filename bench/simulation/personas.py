"""The simulated caller: what it says next, given what the agent said.

* ``ScriptedPersona`` (deterministic) — the script's ``opening`` first (if any; without one, and with nothing heard
  from the agent yet, the script's first turn opens the call); then the first unused turn one of
  whose keywords (or, without keywords, its trigger) occurs in the agent's last reply, case-insensitively and on
  word boundaries; the script's ``repeat_prompt`` when none matches; done (``script_exhaustion``) when every
  ordinary turn is used or a ``final`` turn has been said. A turn with ``interrupt_at_ms`` is the barge-in of the
  turn before it.
* ``SynthesizedPersona`` — an OpenAI-compatible chat model writes the next line from the persona, the scenario, the
  data and the conversation so far. It is grounded: a line that names a number, time, e-mail or proper name that is
  in neither the data, the persona, the scenario nor what the agent said is sent back once for a rewrite, and still
  ungrounded facts are recorded with the turn. ``[END]`` from the model ends the conversation (``persona_completion``).
* ``GoalPersona`` (seed 004) — works through the scenario's steps: a ``static_utterance`` is said as written (one
  turn); other steps are generated toward the step's goal with its response guide, for at most ``max_turns`` turns,
  or until the model answers ``[STEP_DONE]``. Done when every step has run (``goals_completed``).
* ``RealtimePersona`` (``bench.simulation.realtime_persona``) — a realtime speech model plays the caller: it hears
  the agent's audio and its spoken answer (audio + transcript) is the caller's next line, under the same grounding
  rules and ``[END]`` marker as the synthesized persona (``caller_instructions``, ``ungrounded_facts``).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any, Protocol

from bench.simulation.config import Persona, Scenario, Script
from bench.simulation.llm import ChatClient, LlmError

END_TOKEN = "[END]"
STEP_DONE_TOKEN = "[STEP_DONE]"


@dataclass
class CallerLine:
    """One line the caller says, with where it came from."""

    text: str
    source: str  # opening | script | repeat | static | synthesized | realtime
    script_index: int | None = None
    trigger: str | None = None
    #: barge-in: spoken this many ms into the agent's reply to the previous line
    interrupt_at_ms: float | None = None
    step_index: int | None = None
    ungrounded: list[str] = field(default_factory=list)
    model_calls: int = 0
    #: the caller's last line: the conversation ends once it has been answered
    final: bool = False
    #: the caller's own speech (pcm_s16le 24 kHz mono) when its model spoke the line (realtime persona); the
    #: driver sends it instead of synthesizing ``text``
    audio: bytes | None = None
    #: the client events the evaluator sent the persona's model for this line, in order (realtime persona)
    protocol: list[str] = field(default_factory=list)
    #: the script turn's turn-taking probe (``ScriptTurn.turn_taking``, as a mapping)
    turn_taking: dict[str, Any] | None = None
    #: the caller pauses this long in the middle of the line (audio: silence between its two halves)
    pause_ms: float | None = None

    def as_dict(self) -> dict[str, Any]:
        found = {k: v for k, v in self.__dict__.items()
                 if k != "audio" and (v not in (None, [], 0) or k in ("text", "source"))}
        if self.audio is not None:
            found["audio_bytes"] = len(self.audio)
            found["audio_sha256"] = hashlib.sha256(self.audio).hexdigest()
        return found


@dataclass
class Message:
    role: str  # "user" (the simulated caller) | "assistant" (the agent)
    text: str


class Caller(Protocol):
    done_reason: str

    async def next_line(self, agent_said: str, history: list[Message]) -> CallerLine | None: ...

    def barge_in_for(self, line: CallerLine) -> CallerLine | None: ...


def normalize(text: str) -> str:
    return " " + " ".join(re.sub(r"[^\w]+", " ", text.lower()).split()) + " "


def mentions(text: str, phrase: str) -> bool:
    """Whether ``phrase`` occurs in ``text`` (case-insensitive, on word boundaries, punctuation ignored)."""
    needle = normalize(phrase)
    return needle.strip() != "" and needle in normalize(text)


class ScriptedPersona:
    done_reason = "script_exhaustion"

    def __init__(self, script: Script):
        self.script = script
        self.used: set[int] = set()
        self.opened = False

    def _ordinary(self) -> list[int]:
        return [i for i, turn in enumerate(self.script.turns) if turn.interrupt_at_ms is None]

    async def next_line(self, agent_said: str, history: list[Message]) -> CallerLine | None:
        first = not self.opened
        if first:
            self.opened = True
            if self.script.opening:
                return CallerLine(text=self.script.opening, source="opening")
        unused = [i for i in self._ordinary() if i not in self.used]
        if not unused or any(self.script.turns[i].final for i in self.used):
            return None
        if first and not agent_said.strip():
            # the agent said nothing yet: there is nothing to match or to ask it to repeat, so the caller opens with
            # the script's first line (seed 000's fixture: evaluator.init, then the caller's audio)
            index = unused[0]
            self.used.add(index)
            turn = self.script.turns[index]
            return CallerLine(text=turn.response, source="script", script_index=index, trigger=turn.trigger,
                              final=turn.final)
        for index in unused:
            turn = self.script.turns[index]
            phrases = turn.keywords or ([turn.trigger] if turn.trigger else [])
            if any(mentions(agent_said, phrase) for phrase in phrases):
                self.used.add(index)
                return CallerLine(text=turn.response, source="script", script_index=index, trigger=turn.trigger,
                                  final=turn.final, turn_taking=turn.turn_taking.model_dump()
                                  if turn.turn_taking is not None else None)
        return CallerLine(text=self.script.repeat_prompt, source="repeat")

    def barge_in_for(self, line: CallerLine) -> CallerLine | None:
        if line.script_index is None:
            return None
        following = line.script_index + 1
        if following >= len(self.script.turns) or following in self.used:
            return None
        turn = self.script.turns[following]
        if turn.interrupt_at_ms is None:
            return None
        self.used.add(following)
        return CallerLine(text=turn.response, source="script", script_index=following, trigger=turn.trigger,
                          interrupt_at_ms=turn.interrupt_at_ms)


# --- grounding ------------------------------------------------------------------------------------------------
_FACTS = re.compile(r"\b\d[\d:.,/-]*\b|\b[\w.+-]+@[\w-]+\.[\w.]+\b")
_WORD = re.compile(r"[A-Za-z][\w'-]*")
_COMMON = {"I", "I'm", "I'd", "I'll", "Hello", "Hi", "Yes", "No", "Thanks", "Thank", "Please", "Sorry", "Okay", "OK",
           "Good", "Goodbye", "Bye", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"}


def _proper_names(line: str) -> list[str]:
    """Capitalized words that do not start a sentence."""
    names = []
    for sentence in re.split(r"(?<=[.!?])\s+", line):
        words = _WORD.findall(sentence)
        names += [w for w in words[1:] if w[0].isupper() and w not in _COMMON and len(w) > 2]
    return names


def ungrounded_facts(line: str, allowed: str) -> list[str]:
    """Numbers, e-mails and proper names in ``line`` that ``allowed`` does not contain."""
    corpus = normalize(allowed)
    found = []
    for fact in _FACTS.findall(line) + _proper_names(line):
        if normalize(fact).strip() and normalize(fact) not in corpus:
            found.append(fact)
    return list(dict.fromkeys(found))


def _profile(persona: Persona | None) -> dict[str, Any]:
    if persona is None:
        return {"name": "caller"}
    return persona.model_dump(exclude_defaults=True, exclude={"speech"})


def allowed_text(persona: Persona | None, scenario: Scenario, data: dict[str, Any], history: list[Message],
                 extra: str = "") -> str:
    """Everything a grounded caller may take facts from: its data and profile, the scenario and what the agent
    said."""
    agent = " ".join(m.text for m in history if m.role == "assistant")
    return " ".join([json.dumps(data, default=str), json.dumps(_profile(persona), default=str),
                     scenario.description, " ".join(scenario.expected_topics), agent, extra])


def caller_instructions(persona: Persona | None, scenario: Scenario, data: dict[str, Any], *, goal: str = "",
                        guide: str = "", spoken: bool = False) -> str:
    """The persona model's instructions: play the caller, stay within the data, say ``[END]`` when done.
    ``spoken``: for a speech model that hears the agent and answers aloud (the realtime persona)."""
    first = ("You play a caller talking to a voice agent on the phone. You hear the agent; answer aloud with only "
             "the words the caller says next: one or two short spoken sentences, no stage directions. You are the "
             "caller, never the agent. If nothing has been said yet, you start the call."
             if spoken else
             "You play a caller talking to a voice agent on the phone. Write only the words the caller says next: "
             "one or two short spoken sentences, no stage directions, no quotes.")
    rules = [
        first,
        "Use only facts found in the caller data and profile below or said by the agent. Never invent names, "
        "numbers, dates, times or details that are not there; if the agent asks for something you do not have, "
        "say you do not know.",
        f"When the caller's purpose is achieved or the agent has said goodbye, reply with {END_TOKEN} alone.",
    ]
    if persona is not None and persona.session_behavior.instructions:
        rules.append(persona.session_behavior.instructions)
    if persona is not None and persona.session_behavior.conclude_quickly:
        rules.append("Conclude the call quickly once your purpose is achieved.")
    if persona is not None and persona.session_behavior.decline_extras:
        rules.append("Politely decline offers of anything beyond your purpose.")
    parts = ["\n".join(rules), f"Caller profile: {json.dumps(_profile(persona), default=str)}",
             f"Purpose of the call: {scenario.description or scenario.id}"]
    if goal:
        parts.append(f"Current goal: {goal}\nWhen this goal is achieved, reply with {STEP_DONE_TOKEN} alone.")
    if guide:
        parts.append(f"How to behave: {guide}")
    parts.append(f"Caller data (JSON): {json.dumps(data, default=str)}")
    return "\n\n".join(parts)


def rewrite_request(missing: list[str]) -> str:
    """What a persona model is told when its line named facts outside its data."""
    return f"(Rewrite your last line without {', '.join(missing)}: those are not in your data.)"


class SynthesizedPersona:
    done_reason = "persona_completion"

    def __init__(self, client: ChatClient, *, persona: Persona | None, scenario: Scenario, data: dict[str, Any]):
        self.client = client
        self.persona = persona
        self.scenario = scenario
        self.data = data
        self.finishing = False

    def allowed_text(self, history: list[Message], extra: str = "") -> str:
        return allowed_text(self.persona, self.scenario, self.data, history, extra)

    def system_prompt(self, goal: str = "", guide: str = "") -> str:
        return caller_instructions(self.persona, self.scenario, self.data, goal=goal, guide=guide)

    def messages(self, system: str, agent_said: str, history: list[Message]) -> list[dict[str, str]]:
        # from the persona model's view the agent is the other party ("user") and the caller is itself
        messages = [{"role": "system", "content": system}]
        for message in history:
            messages.append({"role": "assistant" if message.role == "user" else "user", "content": message.text})
        if not history or history[-1].role != "assistant" or history[-1].text != agent_said:
            messages.append({"role": "user", "content": agent_said or "(the agent has not said anything yet)"})
        return messages

    async def generate(self, agent_said: str, history: list[Message], *, goal: str = "",
                       guide: str = "") -> CallerLine:
        system = self.system_prompt(goal, guide)
        messages = self.messages(system, agent_said, history)
        result = await self.client.complete(messages, max_tokens=120)
        line = CallerLine(text=clean_line(result.text), source="synthesized", model_calls=1)
        allowed = self.allowed_text(history, f"{agent_said} {goal} {guide}")
        missing = ungrounded_facts(line.text, allowed)
        if missing:
            messages += [{"role": "assistant", "content": result.text},
                         {"role": "user", "content": rewrite_request(missing)}]
            retry = await self.client.complete(messages, max_tokens=120)
            line.text = clean_line(retry.text)
            line.model_calls += 1
            line.ungrounded = ungrounded_facts(line.text, allowed)
        return line

    async def next_line(self, agent_said: str, history: list[Message]) -> CallerLine | None:
        if self.finishing:
            return None
        line = await self.generate(agent_said, history)
        return ending(line, self)

    def barge_in_for(self, line: CallerLine) -> CallerLine | None:
        return None


def clean_line(text: str) -> str:
    """A model's line without quotes and a speaker label."""
    text = text.strip().strip('"').strip()
    return re.sub(r"^(caller|user)\s*:\s*", "", text, flags=re.IGNORECASE)


def ending(line: CallerLine, owner: Any) -> CallerLine | None:
    """``line`` with the end marker handled: None when it was all the model said, else the caller's final line
    (``owner.finishing`` set)."""
    if END_TOKEN in line.text:
        spoken = line.text.replace(END_TOKEN, "").strip()
        if not spoken:
            return None
        owner.finishing = True
        line.text = spoken
        line.final = True
    return line


@dataclass
class StepProgress:
    index: int
    goal: str
    turns_used: int = 0
    done_by_persona: bool = False


class GoalPersona:
    """Seed 004's steps; static utterances need no model."""

    done_reason = "goals_completed"

    def __init__(self, scenario: Scenario, *, synthesizer: SynthesizedPersona | None):
        self.scenario = scenario
        self.synthesizer = synthesizer
        self.progress = [StepProgress(index=i, goal=s.goal) for i, s in enumerate(scenario.steps)]
        self.step = 0
        self.finishing = False

    async def next_line(self, agent_said: str, history: list[Message]) -> CallerLine | None:
        if self.finishing:
            return None
        while self.step < len(self.scenario.steps):
            step = self.scenario.steps[self.step]
            progress = self.progress[self.step]
            if step.static_utterance is not None:
                if progress.turns_used == 0:
                    progress.turns_used = 1
                    return CallerLine(text=step.static_utterance, source="static", step_index=self.step)
                self.step += 1
                continue
            if progress.turns_used >= step.max_turns:
                self.step += 1
                continue
            if self.synthesizer is None:
                raise LlmError(f"step {self.step} ({step.goal!r}) needs a persona model (providers.persona)")
            line = await self.synthesizer.generate(agent_said, history, goal=step.goal, guide=step.response_guide)
            if STEP_DONE_TOKEN in line.text:
                progress.done_by_persona = True
                self.step += 1
                continue
            progress.turns_used += 1
            line.step_index = self.step
            ended = ending(line, self)
            if ended is None:
                return None
            return ended
        return None

    def barge_in_for(self, line: CallerLine) -> CallerLine | None:
        return None
