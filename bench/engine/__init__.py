"""The engine: finds adapters by name, starts emulators, pumps audio, stamps events, schedules conversations
and hands finished records to the store. The only part of ``bench`` that imports ``adapters``."""
