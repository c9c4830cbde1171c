"""The in-house hospital desk: Sint-Aldegonde Hospital's telephone assistant as an orchestrator
(``async query(request, user_id, tenant_id)``) that acts through the conversation's client tools.

It keeps no state: every turn it reads the conversation (``QueryRequest.history``: the caller's and its own turns
and the tool calls with their results) and decides the next step, in the language of the caller's latest words
(it follows a caller who switches). Its rules, from the hospital's brief and the same for every call:

1. An emergency (chest pain, stroke signs, heavy bleeding, breathing trouble, collapse, … in en/nl/fr/it) is
   handed over at once (``hand_over_to_emergency``) and the caller is told to call 112; nothing else is done.
2. A request for medical advice (a dose, whether to worry, what a result means, stopping a medicine …) is declined,
   and a nurse call-back is offered; when the caller accepts, ``transfer_to_nurse_line``.
3. Visiting hours: the department, then ``get_visiting_hours``.
4. Booking, moving and cancelling need the identity check first: the patient's full name and date of birth
   (spoken dates understood, ``dates.parse_date``), ``find_patient``; two failed checks and it gives up without
   changing anything. Booking then asks what is missing (department, day, morning/afternoon), confirms and calls
   ``book_appointment``; moving and cancelling read ``list_appointments``, pick the appointment the caller means
   (or ask which), confirm and call ``reschedule_appointment`` / ``cancel_appointment``. It says only what the tool
   returned.
5. After a task it asks whether there is anything else, and says goodbye when there is not.

A tool call is asked for by answering with ``tool_calls`` (``bench.protocol.orchestrator``); the adapter runs it
through the engine's tool path and asks again with the result.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from adapters.inhouse.hospital import lexicon
from adapters.inhouse.hospital.dates import fold, parse_date
from adapters.inhouse.hospital.phrases import asked, day_name, department_name, part_name, say
from bench.protocol.orchestrator import QueryRequest, QueryResponse, ToolRequest

#: capitalized words that start sentences or introduce a name, never part of one
_NOT_NAMES = {fold(w) for w in (
    "It's", "It", "I'm", "I", "Hers", "His", "He's", "She's", "Oh", "Ah", "Erm", "Sorry", "The", "That", "This", "Yes",
    "No", "Hello", "Hi", "Well", "Wait", "My", "Het", "Mijn", "Ik", "Ja", "Nee", "Van", "Sorry", "Mama", "Papa",
    "Ma", "Mon", "Moi", "C'est", "Celui", "Celle", "Le", "La", "Les", "Il", "Elle", "Oui", "Non", "Pour", "Per", "Mia",
    "Mio", "Io", "Sono", "Si", "No", "Papà", "Mamma", "Scusi", "Excusez-moi", "Dag", "Goeiedag", "Bonjour",
    "Buongiorno", "Not", "Mister", "Mrs", "Mr", "Madame", "Monsieur", "Signora", "Signor",
    "Meneer", "Mevrouw", "Dr", "Doctor", "Dokter", "Docteur", "Dottore",
)} | {fold(w) for words in lexicon.DAY_WORDS.values() for w in words} | {
    "january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november",
    "december", "english", "nederlands", "francais", "italiano", "dutch", "french", "italian"}
_PARTICLES = {"van", "de", "der", "den", "di", "da", "del", "della", "le", "la", "du", "des", "el", "ter", "ten", "d'"}
_SELF = re.compile(r"(?:i'm|i am|ik ben|moi,? c'est|moi c'est|io sono|sono)\s*$")
_NAME_TOKEN = re.compile(r"[A-ZÀ-ÖØ-Þ][\w'’-]*|[a-zà-ÿ][\w'’-]*|\.\.\.|…|[^\w\s]")


def name_candidates(text: str) -> list[str]:
    """Full names (two words or more, capitalized, particles allowed) in ``text``, patients before the caller
    introducing themself ("I'm Rachel; my daughter is Ella Simmons" → Ella Simmons first)."""
    tokens = _NAME_TOKEN.findall(text)
    runs: list[tuple[list[str], int]] = []
    run: list[str] = []
    start = 0

    def close(position: int) -> None:
        nonlocal run
        while run and fold(run[-1]) in _PARTICLES:
            run.pop()
        if len(run) >= 2:
            runs.append((run, position))
        run = []

    for index, token in enumerate(tokens):
        capital = token[0].isupper()
        ahead = next((t for t in tokens[index + 1:] if fold(t) not in _PARTICLES), "")
        if run and fold(token) in _PARTICLES and ahead[:1].isupper():
            run.append(token)  # "Tom Van den Broeck"
        elif capital and fold(token.rstrip("'’s")) not in _NOT_NAMES:
            if not run:
                start = index
            run.append(token)
        elif token in ("...", "…") and len(run) == 1:
            continue  # "Andrea... Serra": a pause inside the name
        else:
            close(start)
    close(start)
    names = []
    for words, position in runs:
        before = fold(" ".join(tokens[max(0, position - 3):position]))
        names.append((1 if _SELF.search(before) else 0, position, " ".join(words)))
    return [name for _, _, name in sorted(names)]


@dataclass
class ToolUse:
    name: str
    arguments: dict[str, Any]
    result: Any
    current: bool  # made for the caller's latest words

    @property
    def error(self) -> str | None:
        return self.result.get("error") if isinstance(self.result, dict) else None


@dataclass
class Conversation:
    """What the desk reads from one request."""

    question: str
    language: str
    user: list[str] = field(default_factory=list)  # every caller turn, the latest last
    #: (the desk's question before it, the caller's answer), oldest first
    answers: list[tuple[str | None, str]] = field(default_factory=list)
    tools: list[ToolUse] = field(default_factory=list)
    previous_reply: str = ""

    @classmethod
    def read(cls, request: QueryRequest) -> Conversation:
        user: list[str] = []
        answers: list[tuple[str | None, str]] = []
        tools: list[ToolUse] = []
        last_reply = ""
        history = list(request.history)
        last_assistant = max((i for i, m in enumerate(history) if m.get("role") == "assistant"), default=-1)
        for index, message in enumerate(history):
            role = message.get("role")
            if role == "user":
                user.append(message.get("content", ""))
                answers.append((asked(last_reply) if last_reply else None, message.get("content", "")))
            elif role == "assistant":
                last_reply = message.get("content", "")
            elif role == "tool":
                try:
                    arguments = json.loads(message.get("arguments") or "{}")
                except ValueError:
                    arguments = {}
                try:
                    result: Any = json.loads(message.get("content") or "null")
                except ValueError:
                    result = message.get("content")
                tools.append(ToolUse(message.get("name", ""), arguments, result, current=index > last_assistant))
        user.append(request.question)
        answers.append((asked(last_reply) if last_reply else None, request.question))
        language = lexicon.detect_language(request.question)
        for earlier in reversed(user[:-1]):
            if language is not None:
                break
            language = lexicon.detect_language(earlier)
        return cls(question=request.question, language=language or request.language or "en", user=user,
                   answers=answers, tools=tools, previous_reply=last_reply)

    def used(self, name: str) -> list[ToolUse]:
        return [t for t in self.tools if t.name == name]

    def now(self, name: str) -> ToolUse | None:
        return next((t for t in reversed(self.tools) if t.name == name and t.current), None)

    @property
    def asked(self) -> str | None:
        return asked(self.previous_reply) if self.previous_reply else None


@dataclass
class Step:
    text: str = ""
    intent: str = "answered"
    tool: ToolRequest | None = None


class HospitalDesk:
    """The orchestrator (see the module docstring); no options."""

    async def query(self, request: QueryRequest, user_id: str, tenant_id: str) -> QueryResponse:
        conversation = Conversation.read(request)
        step = self.decide(conversation)
        if step.tool is not None:
            return QueryResponse(answer="", conversational_intent="appointment", tool_calls=[step.tool],
                                 target_language=conversation.language)
        return QueryResponse(answer=step.text, conversational_intent=step.intent,
                             target_language=conversation.language)

    # -- the rules ----------------------------------------------------------------------------------------------
    def decide(self, c: Conversation) -> Step:
        lang = c.language
        if c.used("hand_over_to_emergency") or lexicon.any_match(c.question, lexicon.EMERGENCY) or \
                lexicon.EMERGENCY_SERVICE.search(fold(c.question)):
            return self.emergency(c)
        if c.asked == "nurse_offer" or c.now("transfer_to_nurse_line"):
            step = self.nurse(c)
            if step is not None:
                return step
        if lexicon.any_match(c.question, lexicon.ADVICE) and lexicon.task_of(c.question) not in (
                "cancel", "reschedule", "visiting_hours"):
            if c.used("transfer_to_nurse_line"):
                return Step(f"{say('decline', lang)} {say('nurse_done', lang)} {say('anything_else', lang)}",
                            "out_of_scope")
            return Step(f"{say('decline', lang)} {say('nurse_offer', lang)}", "out_of_scope")
        done_asking = lexicon.is_no(c.question) or lexicon.THANKS_BYE.search(fold(c.question)) or (
            lexicon.task_of(c.question) is None and not lexicon.is_yes(c.question))
        if c.asked == "anything_else" and not c.now("get_visiting_hours") and done_asking:
            return Step(say("farewell", lang), "farewell")
        task = self.task(c)
        if task is None:
            if lexicon.THANKS_BYE.search(fold(c.question)):
                return Step(say("farewell", lang), "farewell")
            return Step(say("how", lang), "clarify")
        if task == "change" and not any(question == "move_or_cancel" for question, _ in c.answers):
            return Step(say("move_or_cancel", lang), "clarify")
        if task == "change":  # asked once and still not said: an appointment that does not suit is moved
            task = "reschedule"
        if task == "visiting_hours":
            return self.visiting_hours(c)
        return self.appointment(c, task)

    def task(self, c: Conversation) -> str | None:
        """The caller's task: the latest one named ("change" for an appointment they have, until they say whether
        to move or cancel it); a department alone means a new appointment."""
        for text in reversed(c.user):
            task = lexicon.task_of(text)
            if task == "book" and lexicon.any_match(text, lexicon.EXISTING):
                task = "change"  # "I have an appointment on Monday, but ...": move it or cancel it?
            if task == "change" and lexicon.find(
                    [t for q, t in c.answers if q == "move_or_cancel"], lexicon.DAY_WORDS) is not None:
                task = "reschedule"  # asked to move or cancel, the caller named another day
            if task is not None:
                return task
        if lexicon.find(c.user, lexicon.DEPARTMENT_WORDS) is not None:
            return "book"
        return None

    def emergency(self, c: Conversation) -> Step:
        lang = c.language
        if not c.used("hand_over_to_emergency"):
            reason = " ".join(t for t in c.user if lexicon.any_match(t, lexicon.EMERGENCY)
                              or lexicon.EMERGENCY_SERVICE.search(fold(t))) or c.question
            return Step(tool=ToolRequest(name="hand_over_to_emergency", arguments={"reason": reason[:300]}))
        if c.now("hand_over_to_emergency"):
            return Step(say("emergency", lang), "escalate")
        return Step(say("emergency_bye", lang), "farewell")

    def nurse(self, c: Conversation) -> Step | None:
        lang = c.language
        done = c.now("transfer_to_nurse_line")
        if done is not None:
            return Step(f"{say('nurse_done', lang)} {say('anything_else', lang)}", "escalate")
        if lexicon.is_yes(c.question) or any(w in fold(c.question) for w in lexicon.NURSE_WORDS) and not \
                lexicon.is_no(c.question):
            reason = " ".join(t for t in c.user if lexicon.any_match(t, lexicon.ADVICE)) or c.question
            arguments: dict[str, Any] = {"reason": reason[:300]}
            patient = self.patient(c)
            if patient is not None:
                arguments["patient_id"] = patient
            return Step(tool=ToolRequest(name="transfer_to_nurse_line", arguments=arguments))
        if lexicon.is_no(c.question) and lexicon.task_of(c.question) is None:
            return Step(f"{say('nurse_declined', lang)} {say('anything_else', lang)}")
        return None  # the caller goes on with something else

    def visiting_hours(self, c: Conversation) -> Step:
        lang = c.language
        result = c.now("get_visiting_hours")
        if result is not None:
            if result.error:
                return Step(f"{say('failed', lang, error=result.error)} {say('anything_else', lang)}")
            hours = str(result.result.get("hours", "")).replace("-", " – ")
            name = department_name(result.result.get("department", ""), lang)
            return Step(f"{say('hours', lang, department=name, hours=hours)} {say('anything_else', lang)}")
        department = lexicon.find(c.user, lexicon.DEPARTMENT_WORDS)
        if department is None:
            return Step(say("department", lang), "clarify")
        return Step(tool=ToolRequest(name="get_visiting_hours", arguments={"department": department}))

    # -- identity -----------------------------------------------------------------------------------------------
    def patient(self, c: Conversation) -> str | None:
        found = [t for t in c.used("find_patient") if isinstance(t.result, dict) and t.result.get("patient_id")]
        return found[-1].result["patient_id"] if found else None

    def patient_name(self, c: Conversation) -> str:
        found = [t for t in c.used("find_patient") if isinstance(t.result, dict) and t.result.get("patient_id")]
        return str(found[-1].arguments.get("name", "")) if found else ""

    def identity(self, c: Conversation) -> Step | None:
        """The next step of the identity check; None once the patient is found."""
        if self.patient(c) is not None:
            return None
        lang = c.language
        tried = {(t.arguments.get("name"), t.arguments.get("date_of_birth")) for t in c.used("find_patient")}
        answered = [text for question, text in c.answers if question in ("identity", "identity_retry")]
        if c.asked in ("identity", "identity_retry") or c.now("find_patient"):
            recent = answered[-1] if answered else c.question
            born = parse_date(recent) or next((d for d in map(parse_date, reversed(answered)) if d), None)
            names = name_candidates(recent) or [n for text in reversed(answered) for n in name_candidates(text)]
            if born is not None:
                for name in names:
                    if (name, born) not in tried:
                        return Step(tool=ToolRequest(name="find_patient",
                                                     arguments={"name": name, "date_of_birth": born}))
        failures = sum(1 for question, _ in c.answers if question in ("identity", "identity_retry")) \
            if c.used("find_patient") else 0
        if failures >= 2 or (c.asked == "identity_retry" and c.used("find_patient") and failures >= 2):
            return Step(f"{say('give_up', lang)} {say('anything_else', lang)}")
        if c.used("find_patient") or (c.asked in ("identity", "identity_retry") and answered):
            return Step(say("identity_retry", lang), "clarify")
        return Step(say("identity", lang), "clarify")

    # -- appointments -------------------------------------------------------------------------------------------
    def appointment(self, c: Conversation, task: str) -> Step:
        lang = c.language
        for name, template in (("book_appointment", "booked"), ("reschedule_appointment", "moved"),
                               ("cancel_appointment", "cancelled")):
            done = c.now(name)
            if done is not None:
                if done.error:
                    return Step(f"{say('failed', lang, error=done.error)} {say('anything_else', lang)}")
                return Step(f"{say(template, lang, **self.slot_words(done.result, lang, self.patient_name(c)))} "
                            f"{say('anything_else', lang)}", "appointment")
        if any(not t.error for t in c.tools if t.name in ("book_appointment", "reschedule_appointment",
                                                            "cancel_appointment")):
            return Step(say("anything_else", lang))
        if c.previous_reply and say("give_up", lang) in c.previous_reply:
            return Step(say("farewell", lang), "farewell")
        step = self.identity(c)
        if step is not None:
            return step
        if task == "book":
            return self.book(c)
        return self.change(c, task)

    def slot_words(self, slot: dict[str, Any], lang: str, name: str = "") -> dict[str, str]:
        return {"department": department_name(str(slot.get("department", "")), lang),
                "day": day_name(str(slot.get("day", "")), lang), "part": part_name(str(slot.get("part_of_day", "")),
                                                                                    lang), "name": name}

    def book(self, c: Conversation) -> Step:
        lang = c.language
        said = c.user
        department = lexicon.find(said, lexicon.DEPARTMENT_WORDS)
        day = lexicon.find(said, lexicon.DAY_WORDS)
        part = lexicon.find(said, lexicon.PART_WORDS)
        if department is None:
            return Step(say("department", lang), "clarify")
        if day is None:
            return Step(say("day", lang), "clarify")
        if part is None:
            return Step(say("part", lang), "clarify")
        slot = {"department": department, "day": day, "part_of_day": part}
        if c.asked == "confirm_book" and lexicon.is_yes(c.question):
            return Step(tool=ToolRequest(name="book_appointment", arguments={"patient_id": self.patient(c), **slot}))
        return Step(say("confirm_book", lang, **self.slot_words(slot, lang, self.patient_name(c))), "appointment")

    def change(self, c: Conversation, task: str) -> Step:
        lang = c.language
        listed = c.used("list_appointments")
        if not listed or listed[-1].error:
            return Step(tool=ToolRequest(name="list_appointments", arguments={"patient_id": self.patient(c)}))
        booked = [a for a in listed[-1].result.get("appointments", []) if a.get("status") == "booked"]
        if not booked:
            return Step(f"{say('no_appointments', lang, name=self.patient_name(c))} {say('anything_else', lang)}")
        chosen = self.choose(c, booked)
        if chosen is None:
            options = ", ".join(" ".join(self.slot_words(a, lang).values()).strip() for a in booked)
            return Step(say("which", lang, options=options), "clarify")
        if task == "cancel":
            if c.asked == "confirm_cancel" and lexicon.is_yes(c.question):
                return Step(tool=ToolRequest(name="cancel_appointment",
                                             arguments={"appointment_id": chosen["appointment_id"]}))
            return Step(say("confirm_cancel", lang, **self.slot_words(chosen, lang)), "appointment")
        day, part = self.new_slot(c, chosen)
        if day is None:
            return Step(say("new_day", lang), "clarify")
        if part is None:
            return Step(say("part", lang), "clarify")
        if c.asked == "confirm_move" and lexicon.is_yes(c.question):
            return Step(tool=ToolRequest(name="reschedule_appointment", arguments={
                "appointment_id": chosen["appointment_id"], "day": day, "part_of_day": part}))
        slot = {**chosen, "day": day, "part_of_day": part}
        return Step(say("confirm_move", lang, **self.slot_words(slot, lang)), "appointment")

    def choose(self, c: Conversation, booked: list[dict[str, Any]]) -> dict[str, Any] | None:
        """The appointment the caller means: the only one, or the one whose department (then day) they named."""
        if len(booked) == 1:
            return booked[0]
        said = [text for question, text in c.answers if question != "new_day"]
        department = lexicon.find(said, lexicon.DEPARTMENT_WORDS)
        matches = [a for a in booked if a.get("department") == department] if department else booked
        if len(matches) > 1:
            day = lexicon.find(said, lexicon.DAY_WORDS)
            matches = [a for a in matches if a.get("day") == day] if day else matches
        return matches[0] if len(matches) == 1 else None

    def new_slot(self, c: Conversation, chosen: dict[str, Any]) -> tuple[str | None, str | None]:
        """The day and part of the day to move to: what the caller said when asked, else a day named that is not
        the appointment's own."""
        after = [text for question, text in c.answers if question in ("new_day", "part", "confirm_move")]
        if after:
            return lexicon.find(after, lexicon.DAY_WORDS), lexicon.find(after, lexicon.PART_WORDS)
        for text in reversed(c.user):
            day = lexicon.find(text, lexicon.DAY_WORDS)
            if day is not None and day != chosen.get("day"):
                return day, lexicon.find(text, lexicon.PART_WORDS)
        return None, None
