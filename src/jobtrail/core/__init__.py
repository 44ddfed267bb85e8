"""The pure core: states, evidence, planning and applying outcomes. No I/O, no clock, no globals."""
