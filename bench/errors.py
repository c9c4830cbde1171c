"""Error types that map onto the harness's documented exit codes.

0 success · 2 usage/config/data error · 3 quality gate failed · 4 execution failure.
"""

from __future__ import annotations

from dataclasses import dataclass

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_GATE_FAILED = 3
EXIT_EXECUTION_FAILURE = 4


@dataclass(frozen=True)
class Problem:
    """One validation problem, addressed by file, entry and field."""

    file: str
    entry: str
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}: {self.entry}: {self.field}: {self.message}"


class BenchError(Exception):
    """Base class; ``exit_code`` says how the CLI ends when this escapes a command."""

    exit_code = EXIT_EXECUTION_FAILURE


class ConfigError(BenchError):
    """Bad usage, configuration or data (exit 2). The message names file, entry and field."""

    exit_code = EXIT_USAGE


class ValidationFailed(ConfigError):
    """A data file broke its schema or cross-references; carries every problem found."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


class MissingCredential(ConfigError):
    """A live system needs an environment variable that is not set."""

    def __init__(self, system: str, variable: str):
        self.variable = variable
        super().__init__(
            f"system {system!r} runs in live mode and needs the environment variable {variable}; "
            f"set it, or run the system in emulated mode"
        )


class MissingExtra(ConfigError):
    """A vendor SDK is not installed; names the extra that brings it."""

    def __init__(self, system: str, extra: str, module: str):
        super().__init__(
            f"system {system!r} needs the Python package for {module!r}; "
            f"install it with: pip install 'voice-agent-bench[{extra}]'"
        )


class ExecutionFailure(BenchError):
    """A system or provider could not run (exit 4)."""

    exit_code = EXIT_EXECUTION_FAILURE


class JudgeUnavailable(ExecutionFailure):
    """A judge (the LLM scoring judge, DeepEval's model) could not be asked: unreachable, refused, timed out.

    The message names the judge and the error's type and text, redacted (a server that echoes the request puts the
    ``Authorization`` header in its error body); the original exception is not chained, so no traceback shows it.
    """

    def __init__(self, judge: str, error: BaseException | str):
        from bench.protocol.redact import redact

        # the type after the text: "AuthenticationError: …" would read to the redactor as an auth header
        detail = error if isinstance(error, str) else f"{error} ({type(error).__name__})"
        self.judge = judge
        self.detail = redact(detail)[:500]
        super().__init__(f"judge unavailable: {judge}: {self.detail}")

    def __reduce__(self) -> tuple:  # crosses the scoring pool's process boundary as it is
        return (JudgeUnavailable, (self.judge, self.detail))
