"""Run golden entries through one system and report them as the seed's ``VoiceEvalReport`` (the ``VoiceEvaluator``
usage: hand it an orchestrator object or any session adapter)."""

from __future__ import annotations

from adapters.inhouse.adapter import InhouseAdapter
from bench.config import RunConfig, SystemConfig
from bench.dataset import GoldenSet
from bench.engine.scheduler import run_benchmark
from bench.evaluator import VoiceEvalReport, report_from_records
from bench.orchestrator import Orchestrator
from bench.protocol import SystemUnderTest
from bench.store import Store


async def evaluate_adapter(adapter: SystemUnderTest, golden: GoldenSet, *, system: SystemConfig | None = None,
                           store: Store | None = None, trials: int = 1) -> VoiceEvalReport:
    """Run ``golden`` through ``adapter`` (recording into ``store``, or an in-memory one) and report."""
    # validated: the protocol types an adapter's mode as a plain string
    system = system or SystemConfig.model_validate(
        {"id": adapter.system_id, "adapter": "custom", "mode": adapter.mode, "concurrency": 8})
    config = RunConfig(dataset=golden.path, trials=trials, systems=[system])
    own = store is None
    store = store or Store(":memory:")
    try:
        outcome = await run_benchmark(config, golden, store, progress=False, adapters={system.id: adapter})
        return report_from_records(golden.entries, store.turns(outcome.run_id, system.id), criteria=config.criteria)
    finally:
        if own:
            store.close()


async def evaluate_orchestrator(orchestrator: Orchestrator, golden: GoldenSet, *, system: SystemConfig | None = None,
                                store: Store | None = None, trials: int = 1) -> VoiceEvalReport:
    """Evaluate an in-house orchestrator object directly (the seed's ``VoiceEvaluator`` usage)."""
    return await evaluate_adapter(InhouseAdapter("inhouse", orchestrator), golden, system=system, store=store,
                                  trials=trials)
