"""Warm-ups before the clock starts: the imports and first uses that would otherwise stall the event loop inside
the first conversations (a lazy import on the first resampled frame once stalled it for seconds, and those
conversations reported hundreds of ms too little).

``warm_up`` loads the stream resampler (soxr) and runs it once for each direction the harness uses, runs the
whole-buffer resampler, and loads TEN VAD's native library through the recorder's VAD. The scheduler calls it off the
event loop before it starts any conversation.
"""

from __future__ import annotations

from bench.audio.pcm import resample_pcm16, tone_pcm16
from bench.protocol import StreamResampler
from bench.protocol.audio import CANONICAL_RATE

#: rates adapters and the VAD resample between (vendors at 8, 16, 22.05 and 48 kHz; the VAD at 16 kHz)
WARM_RATES = (8000, 16000, 22050, 48000)


def warm_up() -> None:
    probe = tone_pcm16(100)
    for rate in WARM_RATES:
        for source, target in ((CANONICAL_RATE, rate), (rate, CANONICAL_RATE)):
            resampler = StreamResampler(source, target)
            resampler.push(probe)
            resampler.flush()
        resample_pcm16(probe, CANONICAL_RATE, rate)
    from bench.audio.vad import first_speech_ms

    first_speech_ms(bytes(4800) + probe, CANONICAL_RATE)  # loads TEN VAD (its native library) once
