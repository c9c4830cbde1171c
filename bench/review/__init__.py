"""The fluency reviewer workflow: answer audio as clips, a blinded browser app, offline sheets, aggregation.

- ``bench.review.clips`` — every answer's clip (the system's own audio, else synthesized and labelled so);
- ``bench.review.app`` / ``bench.review.server`` — the review web app (Starlette on uvicorn, token, CSRF);
- ``bench.review.sheet`` — export clips + a CSV sheet, import it back (validated, one transaction);
- ``bench.review.aggregate`` — ``fluency_summary(store, run_id)``, agreement (Krippendorff's alpha, ordinal),
  self-consistency; ``ratings_for_summary`` feeds the report's fluency column;
- ``bench.review.ratings`` — the workflow's tables in the run store.

Nothing here is imported by the harness core; the web stack (starlette, uvicorn) is imported only by the app.
"""
