"""LLM judges through an OpenAI-compatible endpoint (the loopback openai-chat emulator): critical judges fail
closed, advisory ones are reported only; seed 004's goal form (steps + expectations) and the naturalness metric."""

from __future__ import annotations

import textwrap

from bench.simulation.runner import RunOptions, SimulationRun
from bench.simulation.suite import load_suite
from tests.simulation.conftest import edit_yaml, load_json
from tests.simulation.fakes import FAIL_MARK, JudgeModel, start_chat_model


def _with_judges(planning, url: str, custom: list[dict], evaluators: list[dict] | None = None) -> None:
    edit_yaml(planning, lambda d: d.update(
        providers={"judge": {"base_url": url, "model": "judge-model", "api_key": "judge-key-0001",
                             "usd_per_call": 0.001}},
        quality_evaluation={"timeout_seconds": 20, "custom_judges": custom, "evaluators": evaluators or []}))


async def _run(planning, artifacts, **options):  # noqa: ANN003
    simulation = SimulationRun(load_suite(planning), RunOptions(artifacts_dir=artifacts, trials=1, progress=False,
                                                                **options))
    return await simulation.execute()


async def test_a_critical_judge_that_errors_fails_the_trial(planning, tmp_path):
    judge = await start_chat_model(JudgeModel(), faults={"rate": 1.0, "kinds": ["error_event"]})
    try:
        _with_judges(planning, judge.base_url, [{"name": "no_unsupported_commitments", "is_critical": True,
                                                  "criteria": "The assistant claims nothing the tools do not show."}])
        result = await _run(planning, tmp_path / "out")
    finally:
        await judge.close()
    assert result.exit_code == 3
    trial = load_json(tmp_path / "out" / "trial-001" / "trial-report.json")
    assert trial["execution_status"] == "succeeded" and trial["passed"] is False
    verdict = next(v for v in trial["verdicts"] if v["name"] == "no_unsupported_commitments")
    assert verdict["critical"] and not verdict["passed"] and verdict["detail"].startswith("judge error:")
    assert trial["critical_failures"] == ["no_unsupported_commitments"]
    assert trial["judge_errors"] and trial["judge_errors"][0].startswith("no_unsupported_commitments:")


async def test_an_unreachable_critical_judge_fails_closed(planning, tmp_path):
    _with_judges(planning, "http://127.0.0.1:9/v1", [{"name": "grounded_claims", "criteria": "No invented facts."}])
    result = await _run(planning, tmp_path / "out")
    assert result.exit_code == 3
    trial = load_json(tmp_path / "out" / "trial-001" / "trial-report.json")
    assert trial["critical_failures"] == ["grounded_claims"]


async def test_advisory_judges_are_reported_only_and_passing_judges_pass(planning, tmp_path):
    model = JudgeModel()
    judge = await start_chat_model(model)
    try:
        _with_judges(planning, judge.base_url,
                     [{"name": "tool_backed", "criteria": "Claims are backed by the tool evidence."},
                      {"name": "style_note", "is_critical": False, "criteria": f"{FAIL_MARK} advisory"}],
                     [{"type": "task_adherence", "threshold": 3}, {"type": "groundedness", "threshold": 5}])
        result = await _run(planning, tmp_path / "out")
    finally:
        await judge.close()
    assert result.exit_code == 0
    trial = load_json(tmp_path / "out" / "trial-001" / "trial-report.json")
    verdicts = {v["name"]: v for v in trial["verdicts"]}
    assert verdicts["tool_backed"]["passed"] and verdicts["tool_backed"]["critical"]
    assert not verdicts["style_note"]["passed"] and not verdicts["style_note"]["critical"]
    assert verdicts["task_adherence"]["passed"] and verdicts["task_adherence"]["evidence"]["score"] == 4
    assert not verdicts["groundedness"]["passed"]  # 4 < threshold 5, but advisory by default
    assert trial["passed"] is True and trial["judge_errors"] == []
    # the judge read the conversation and the outcome evidence
    assert any("Please record the plan" in r and "follow_up_created" in r for r in model.requests)
    assert trial["cost"]["actual_usd"] >= 0.004  # four judge calls at 0.001


async def test_seed_004_goal_form_with_naturalness(planning, tmp_path):
    model = JudgeModel()
    judge = await start_chat_model(model)
    folder = planning.parent
    (folder / "evals.yaml").write_text(textwrap.dedent("""
        evals:
          - name: planning_goal
            tags: [P0, voice, naturalness]
            naturalness_metric:
              pass_threshold: 3.0
              latency_failure_threshold_ms: 60000
            session_parameters:
              session_id: goal-session-1
              context: {topic: daily planning, requested_reminder: Stand-up notes at 09:15}
            steps:
              - goal: Start the planning call
                success_criteria: The agent offers to record the plan
                static_utterance: Hi, I would like to go over my daily plan.
              - goal: Get the plan saved
                success_criteria: The agent confirms the plan and the reminder
                static_utterance: Please record the plan and save the reminder.
            expectations:
              - The agent confirmed the reminder time
    """), encoding="utf-8")
    edit_yaml(planning, lambda d: (d.pop("scenario_path"), d.pop("script_path"), d.pop("data_path"),
                                   d.update(evals_path="evals.yaml")))
    try:
        _with_judges(planning, judge.base_url, [])
        result = await _run(planning, tmp_path / "out")
    finally:
        await judge.close()
    trial = load_json(tmp_path / "out" / "trial-001" / "trial-report.json")
    names = [v["name"] for v in trial["verdicts"]]
    assert names == ["concise", "step_1", "step_2", "expectation_1"]
    assert all(v["passed"] for v in trial["verdicts"][1:]) and trial["verdicts"][1]["detail"].startswith("Met:")
    assert trial["exit_reason"] in ("goals_completed", "endpoint_completion")
    natural = trial["naturalness"]
    # every judged factor 4, latency measured (fast loopback: 5 weighted 3), conversation factors 3
    turn_scores = [t["score"] for t in natural["naturalness_details"]["turns"]]
    assert all(4.0 <= s <= 4.3 for s in turn_scores)
    assert natural["naturalness_label"] in ("Human-like", "Transitional") and natural["passed"] is True
    assert all(t["factors"]["perceivedLatency"] >= 1 for t in natural["naturalness_details"]["turns"])
    assert result.exit_code == 0
