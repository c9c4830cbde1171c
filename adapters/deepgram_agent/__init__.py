"""Deepgram Voice Agent v1 (``/v1/agent/converse``): wire models, the per-turn driver, live (SDK) and emulated
paths.

The knowledge base reaches the agent the way seed 003's "Deepgram knowledge-base upload" row is emulated here:
the top-k passages for the question are put in the agent prompt (``Settings.agent.think.prompt``), because the
Voice Agent API has no knowledge-base upload of its own.
"""
