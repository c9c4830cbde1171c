"""Audio in the harness: PCM helpers, the pump's frames, VAD, speech synthesis and recordings."""
