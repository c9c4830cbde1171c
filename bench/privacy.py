"""Credentials and personal data out of everything the harness keeps or sends away: the one call the store, the
judges, the bundle and artifact writers make (``scrub`` for text, ``scrub_json`` for a JSON document, ``scrub_value``
for a structure, ``scrub_file_bytes`` for a file about to be written).

Each runs the credential redactor (``bench.protocol.redact``) and then the personal-data redactor
(``bench.protocol.pii``) with what this process registered: the names and dates of birth of the scenario data
(``register_data``), the configured names (``configure_from``: a run or simulation config's ``privacy`` block), and
the hospital's own published phone numbers and e-mail addresses (read once from the shipped knowledge base, so an
agent quoting the switchboard keeps its answer). In a structure, a value under a key that names personal data
(``phone``, ``email``, ``date_of_birth``, a tool argument ``name`` ...) is replaced whole.

``RedactionState`` carries all of it to another process (the store writer's child): ``redaction_state()`` there,
``apply_redaction_state`` here.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from bench.protocol import pii
from bench.protocol.redact import known_secrets, redact, redact_many, redact_value, register_secret

#: keys whose whole (string) value is personal data, and the kind it is
_PERSONAL_KEYS: dict[str, str] = {
    **dict.fromkeys(("phone", "phone_number", "telephone", "mobile", "gsm", "callback_number", "caller_number",
                     "from_number", "to_number", "caller_id"), "phone"),
    **dict.fromkeys(("email", "e_mail", "email_address", "mail"), "email"),
    **dict.fromkeys(("date_of_birth", "dob", "birth_date", "birthdate", "birthday"), "date_of_birth"),
    **dict.fromkeys(("national_id", "national_number", "national_register_number", "rijksregisternummer", "rrn",
                     "ssn", "insz"), "national_id"),
    **dict.fromkeys(("patient_name", "caller_name", "full_name", "first_name", "last_name", "surname",
                     "given_name", "family_name"), "name"),
}
#: under these keys a plain ``name`` is a person's (a tool call's arguments, a persona, a patient row)
_PERSON_CONTAINERS = frozenset({"arguments", "args", "persona", "patient", "patients", "caller", "contact"})
#: where the data a scenario ships names people (a tool call's arguments are not data: a tool schema's "name" is a
#: parameter's)
_DATA_PERSON_CONTAINERS = frozenset({"persona", "patient", "patients", "caller", "contact", "data", "user",
                                     "customer", "relative", "contacts"})


class PrivacyConfig(BaseModel):
    """The ``privacy`` block of a run or simulation config."""

    model_config = ConfigDict(extra="forbid")

    #: personal data is redacted before storage, export and any judge; false turns that off (a loud warning)
    redact_personal_data: bool = True
    #: more names to remove wherever they appear (people the data does not list: staff, relatives)
    names: list[str] = Field(default_factory=list)
    #: mute the audio of utterances that held personal data in exported bundles (turn-level: see ``bench.mute``)
    mute_audio: bool = False


_settings = {"mute_audio": False}


def configure_from(config: PrivacyConfig | None) -> None:
    """Apply a config's ``privacy`` block to this process."""
    if config is None:
        return
    pii.configure(enabled=config.redact_personal_data, names=config.names)
    _settings["mute_audio"] = config.mute_audio


def mute_audio() -> bool:
    return _settings["mute_audio"] and pii.enabled()


_NAME_KEYS = frozenset({"name", "persona_name", "full_name", "patient_name", "caller_name", "first_name",
                        "last_name", "surname"})


def register_data(data: Any) -> None:
    """Remember the names and dates of birth in a scenario's persona and data (any nesting: ``name`` keys under a
    persona/patient, ``*_name`` keys, ``date_of_birth`` keys) so they are removed wherever they appear."""
    names: list[str] = []
    dates: list[str] = []

    def walk(value: Any, parent: str | None) -> None:
        if isinstance(value, BaseModel):
            value = value.model_dump()
        if isinstance(value, Mapping):
            for key, item in value.items():
                key_text = str(key).lower()
                if isinstance(item, str):
                    if key_text in _NAME_KEYS - {"name"} or (key_text == "name"
                                                             and parent in _DATA_PERSON_CONTAINERS):
                        names.append(item)
                    elif _PERSONAL_KEYS.get(key_text) == "date_of_birth":
                        dates.append(item)
                else:
                    walk(item, key_text)
        elif isinstance(value, (list, tuple)):
            for item in value:
                walk(item, parent)

    walk(data, None)
    if names or dates:
        pii.configure(names=names, dates_of_birth=dates)


@functools.lru_cache(maxsize=1)
def public_contacts() -> tuple[str, ...]:
    """The phone numbers and e-mail addresses the shipped knowledge base publishes (the hospital's own)."""
    folder = Path(__file__).resolve().parent / "data" / "knowledge_base"
    contacts: set[str] = set()
    for path in sorted(folder.rglob("*")) if folder.is_dir() else ():
        if path.is_file() and path.suffix in (".md", ".txt", ".json"):
            contacts.update(pii.public_contacts_in(path.read_text(encoding="utf-8", errors="replace")))
    return tuple(sorted(contacts))


@functools.lru_cache(maxsize=1)
def _register_public_contacts() -> int:
    """``public_contacts`` registered with the personal-data redactor (once)."""
    contacts = public_contacts()
    pii.configure(public_contacts=contacts)
    return len(contacts)


def pseudonym(label: str, identifier: str) -> str:
    """``identifier`` when it names no one, else ``label-`` and 8 hex digits of its SHA-256 (stable across runs and
    resumes, different for different people): for ids that are stored and exported as keys ("Sofie-Jansen" in a
    conversation id), where a ``[NAME]`` marker would make two people one."""
    if not pii.enabled():
        return identifier
    spaced = identifier.replace("-", " ").replace("_", " ")
    if _pii(spaced) == spaced and _pii(identifier) == identifier:
        return identifier
    return f"{label}-{hashlib.sha256(identifier.encode('utf-8')).hexdigest()[:8]}"


def _pii(text: str, names: tuple[str, ...] = ()) -> str:
    _register_public_contacts()
    return pii.redact_pii(text, names=names)


def scrub(text: str) -> str:
    """``text`` without credentials and personal data."""
    if not text:
        return text
    return _pii(redact(text))


def scrub_many(texts: Iterable[str]) -> list[str]:
    """``scrub_json`` of each text (a JSON document stays one, valid; anything else is scrubbed as plain text); a
    name introduced in one of them (a conversation's turns and events) is removed from all of them."""
    clean = redact_many(list(texts))
    if not pii.enabled():
        return clean
    values: list[Any] = []
    for text in clean:
        try:
            values.append(json.loads(text) if text else text)
        except ValueError:
            values.append(text)
    names = _names_said(values)
    out: list[str] = []
    for text, value in zip(clean, values, strict=True):
        if not text:
            out.append(text)
        elif isinstance(value, (dict, list)):
            out.append(json.dumps(_scrub_value(value, None, None, names), ensure_ascii=False, separators=(",", ":")))
        elif isinstance(value, str) and value is not text:
            out.append(json.dumps(_pii(value, names), ensure_ascii=False))
        else:
            out.append(_pii(text, names))
    return out


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)


def _names_said(value: Any) -> tuple[str, ...]:
    """The names a cue introduced anywhere in ``value`` ("I'm Ilse Verstraete"), to remove them from every other
    string of the same document too (the agent's "Thank you, Ilse" three turns later)."""
    _register_public_contacts()
    redactor = pii.default_redactor()
    found: set[str] = set()
    for text in _strings(value):
        if text and any(c.isupper() for c in text):
            found.update(text[s.start:s.end] for s in redactor.spans(text) if s.kind == "name")
    return tuple(sorted(found))


def scrub_value(value: Any, *, key: str | None = None, parent: str | None = None) -> Any:
    """A copy of ``value`` (dicts, lists, strings) without credentials and personal data; a string holding a JSON
    object or list (a tool call's arguments) is scrubbed inside and stays JSON. A name introduced in one string is
    removed from all of them."""
    value = redact_value(value, key=key)
    if not pii.enabled():
        return value
    return _scrub_value(value, key, parent, _names_said(value))


def _scrub_value(value: Any, key: str | None, parent: str | None, names: tuple[str, ...]) -> Any:
    if isinstance(value, str):
        if not value:
            return value
        kind = _PERSONAL_KEYS.get((key or "").lower())
        if kind is None and key == "name" and parent in _PERSON_CONTAINERS:
            kind = "name"
        if kind is not None and not (value.startswith("[") and value.endswith("]")):
            return pii.marker(kind)
        stripped = value.lstrip()
        if stripped[:1] in ("{", "[") and len(value) > 1:
            try:
                inner = json.loads(value)
            except ValueError:
                return _pii(value, names)
            if isinstance(inner, (dict, list)):  # a JSON document in a string: scrubbed as the value of ``key``
                return json.dumps(_scrub_value(inner, key, parent, names), ensure_ascii=False)
        return _pii(value, names)
    if isinstance(value, Mapping):
        return {k: _scrub_value(v, str(k), key, names) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_scrub_value(v, key, parent, names) for v in value]
    return value


def scrub_json(text: str, *, secrets_done: bool = False) -> str:
    """A JSON document's text without credentials and personal data, still valid JSON (compact, as pydantic writes
    it); text that is not JSON is scrubbed as plain text."""
    if not text:
        return text
    if not secrets_done:
        text = redact(text)
    if not pii.enabled():
        return text
    try:
        value = json.loads(text)
    except ValueError:
        return _pii(text)
    if isinstance(value, str):
        return json.dumps(_pii(value), ensure_ascii=False)
    return json.dumps(_scrub_value(value, None, None, _names_said(value)), ensure_ascii=False,
                      separators=(",", ":"))


_TEXT_SUFFIXES = (".md", ".txt", ".log", ".csv", ".html")


def scrub_file_bytes(name: str, data: bytes) -> bytes:
    """A file's content about to be written, scrubbed by its kind: ``.json`` as JSON (kept indented),
    ``.jsonl`` line by line, text files as text; anything else (audio) unchanged."""
    if not pii.enabled() and not known_secrets():
        return data
    lower = name.lower()
    if not lower.endswith((".json", ".jsonl", *_TEXT_SUFFIXES)):
        return data
    text = data.decode("utf-8", errors="replace")
    if lower.endswith(".json"):
        try:
            value = json.loads(text)
        except ValueError:
            return scrub(text).encode("utf-8")
        indent = 2 if text.lstrip()[:1] in "[{" and "\n" in text.strip() else None
        scrubbed = json.dumps(scrub_value(value), indent=indent, ensure_ascii=False)
        return (scrubbed + ("\n" if text.endswith("\n") else "")).encode("utf-8")
    if lower.endswith(".jsonl"):
        lines = [scrub_json(line) if line.strip() else line for line in text.split("\n")]
        return "\n".join(lines).encode("utf-8")
    return scrub(text).encode("utf-8")


class RedactionState(NamedTuple):
    """What another process needs to redact as this one does."""

    secrets: tuple[str, ...]
    pii_enabled: bool
    names: tuple[str, ...]
    dates_of_birth: tuple[str, ...]


def redaction_state() -> RedactionState:
    names, dates = pii.registered()
    return RedactionState(tuple(sorted(known_secrets())), pii.enabled(), names, dates)


def apply_redaction_state(state: Any) -> None:
    """Take over another process's ``RedactionState`` (a plain tuple of credentials, as older writers send, too)."""
    if isinstance(state, RedactionState) or (isinstance(state, tuple) and len(state) == 4
                                            and isinstance(state[0], tuple)):
        secrets, enabled, names, dates = state
        for value in secrets:
            register_secret(value)
        if enabled != pii.enabled():
            pii.configure(enabled=enabled)
        pii.configure(names=names, dates_of_birth=dates)
        return
    for value in state or ():
        register_secret(value)


_MARKER = re.compile(r"\[(?:" + "|".join(k.upper() for k in pii.KINDS) + r")\]")


def holds_marker(text: str | None) -> bool:
    """Whether a scrubbed text had personal data taken out of it."""
    return bool(text) and bool(_MARKER.search(text or ""))


def personal_intervals(entries: list[dict[str, Any]], role: str | None = None) -> list[tuple[float, float | None]]:
    """The stretches (seconds from the recording's start; None = to its end) of the transcript ``entries`` (a
    bundle's ``transcript.json``: role, content, ``t_ms`` from the same origin as the recording) whose scrubbed
    content held personal data, of ``role`` (``user``/``assistant``) or of either: from the utterance's start to
    the next utterance's start. Turn-level timing: the whole utterance is muted, not the words."""
    intervals: list[tuple[float, float | None]] = []
    for index, entry in enumerate(entries):
        if role is not None and entry.get("role") != role:
            continue
        if not holds_marker(str(entry.get("content") or "")) or not isinstance(entry.get("t_ms"), (int, float)):
            continue
        following = next((e.get("t_ms") for e in entries[index + 1:]
                          if isinstance(e.get("t_ms"), (int, float)) and e["t_ms"] > entry["t_ms"]), None)
        intervals.append((entry["t_ms"] / 1000.0, following / 1000.0 if following is not None else None))
    return intervals


def mute_wav(data: bytes, intervals: list[tuple[float, float | None]]) -> bytes:
    """A 16-bit PCM WAV with the given stretches (seconds; None = to the end) silenced, all else unchanged."""
    import io
    import wave

    if not intervals:
        return data
    with wave.open(io.BytesIO(data), "rb") as reader:
        params = reader.getparams()
        frames = bytearray(reader.readframes(reader.getnframes()))
    width = params.sampwidth * params.nchannels
    total = len(frames) // width
    for start_s, end_s in intervals:
        first = max(0, min(total, int(start_s * params.framerate)))
        last = total if end_s is None else max(first, min(total, int(end_s * params.framerate + 0.5)))
        frames[first * width:last * width] = bytes((last - first) * width)
    out = io.BytesIO()
    with wave.open(out, "wb") as writer:
        writer.setparams(params)
        writer.writeframes(bytes(frames))
    return out.getvalue()
