"""Fake ``ttnn.device`` of ttnn 0.70: no RegisterProgramRealtimeProfilerCallback."""


def GetNumAvailableDevices():
    return 1
