"""Preflight of the nightly audio loop: what to install for a run, and whether that run can start, before it pays.

``extras``: prints the comma-separated extras of voice-agent-bench the run needs — ``audio`` (WER/CER, pocketsphinx),
the speech engines' (``elevenlabs`` for ``--tts elevenlabs``, ``deepgram`` for ``--stt deepgram``) and the SDK extra
each selected system's adapter declares — so the workflow installs exactly what it runs.

``check``: builds every selected system's adapter as the run will (installed SDK and its version, credentials of
live systems, capabilities, knowledge strategy), checks that a live or emulated system's vendor SDK is installed
(some adapters import it only when a session opens), imports each emulated system's emulator, and opens the speech
synthesizer and recognizer (keys read, SDKs imported, espeak-ng on the PATH); no vendor is called and nothing is
synthesized or transcribed. Every problem is printed, one per line, naming the system or engine; exit 2 if any.
``voice-bench audio-loop`` builds the systems only after synthesis and recognition, so without this step a system
that cannot run would be found after the live speech engines had been paid.

Exit codes: 0 ready · 2 a config, extra or credential problem (listed).
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import sys
from typing import TYPE_CHECKING

from bench.errors import EXIT_OK, EXIT_USAGE, BenchError

if TYPE_CHECKING:
    from bench.config import RunConfig

#: the extra every audio loop needs (jiwer for WER/CER; pocketsphinx, the offline recognizer)
LOOP_EXTRA = "audio"
#: the extra each speech engine's SDK comes with (None: no Python SDK)
TTS_EXTRAS = {"espeak-ng": None, "elevenlabs": "elevenlabs"}
STT_EXTRAS = {"pocketsphinx": LOOP_EXTRA, "deepgram": "deepgram"}
PROJECT = "voice-agent-bench"


def _config(path: str | None, systems: str | None) -> RunConfig:
    from bench.config import DEFAULT_CONFIG, load_config
    from bench.paths import resolve_input

    config = load_config(resolve_input(path) if path else DEFAULT_CONFIG)
    if systems:
        config = config.select([s.strip() for s in systems.split(",") if s.strip()])
    return config


def needed_extras(config: RunConfig, tts: str, stt: str) -> list[str]:
    """The extras of this project the run needs (sorted); an adapter of another package names its own, not listed."""
    from bench.engine.registry import spec_for

    extras = {LOOP_EXTRA, TTS_EXTRAS.get(tts), STT_EXTRAS.get(stt)}
    for system in config.systems:
        spec = spec_for(system)
        if spec.extra and spec.package == PROJECT:
            extras.add(spec.extra)
    return sorted(e for e in extras if e)


def _check_engines(tts: str, stt: str) -> list[str]:
    from bench.audioloop.stt import make_transcriber
    from bench.review.synth import make_synthesizer

    problems = []
    if importlib.util.find_spec("jiwer") is None:
        problems.append(f"WER/CER: the jiwer package is missing; install {PROJECT}[{LOOP_EXTRA}]")
    if tts == "espeak-ng" and shutil.which("espeak-ng") is None:
        problems.append("--tts espeak-ng: the espeak-ng program is not on the PATH (apt-get install espeak-ng)")
    for what, open_engine in ((f"--tts {tts}", lambda: make_synthesizer(tts)),
                              (f"--stt {stt}", lambda: make_transcriber(stt))):
        try:
            open_engine()
        except BenchError as exc:
            problems.append(f"{what}: {exc}")
    return problems


def _sdk_installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ModuleNotFoundError, ValueError):  # a missing parent package; a module set to None in sys.modules
        return False


def _check_systems(config: RunConfig) -> list[str]:
    from bench.engine.registry import emulator_start, spec_for
    from bench.engine.scheduler import build_adapters

    problems = []
    for system in config.systems:
        try:
            build_adapters(config.select([system.id]), "text")
            spec = spec_for(system)
            # some adapters import their SDK only when a session opens; a vendor's SDK talks to its emulator too
            if system.mode in ("live", "emulated") and spec.sdk_module and not _sdk_installed(spec.sdk_module):
                problems.append(f"system {system.id!r} ({system.adapter}, {system.mode}): the vendor SDK "
                                f"{spec.sdk_distribution or spec.sdk_module} is not installed; install it with: "
                                f"{spec.install_hint}")
                continue
            if system.mode == "emulated" and spec.emulator:
                emulator_start(spec.emulator, system=system, spec=spec)
        except BenchError as exc:
            problems.append(f"system {system.id!r} ({system.adapter}, {system.mode}): {exc}")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("extras", "check"))
    parser.add_argument("--config", help="run config YAML (default: the shipped default config)")
    parser.add_argument("--systems", help="comma-separated system ids from the config (default: all)")
    parser.add_argument("--tts", choices=sorted(TTS_EXTRAS), default="espeak-ng")
    parser.add_argument("--stt", choices=sorted(STT_EXTRAS), default="pocketsphinx")
    args = parser.parse_args(argv)
    try:
        config = _config(args.config, args.systems)
        if args.action == "extras":
            print(",".join(needed_extras(config, args.tts, args.stt)))
            return EXIT_OK
        problems = _check_engines(args.tts, args.stt) + _check_systems(config)
    except BenchError as exc:
        print(f"preflight: {exc}", file=sys.stderr)
        return EXIT_USAGE
    source = args.config or "the default config"
    if problems:
        print(f"preflight: the audio loop cannot run ({source}); nothing was synthesized, transcribed or sent:",
              file=sys.stderr)
        for problem in problems:
            print(f"  - {problem}", file=sys.stderr)
        return EXIT_USAGE
    modes = ", ".join(f"{s.id} ({s.mode})" for s in config.systems)
    print(f"preflight: ready ({source}): --tts {args.tts}, --stt {args.stt}; systems: {modes}")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
