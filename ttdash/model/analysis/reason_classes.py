"""The reason classes' codes (model.reasons assigns them, model.reasons_try says what to try for
each): apart so that the two do not import each other."""

#: Reason classes (the per-op `why_class` codes index these).
UNDER, SKEW, LINK, PM_DRAM, PM_COMPUTE, PM_OTHER, ROOF_DRAM, ROOF_COMPUTE, SLOW, DISPATCH, \
    NO_DATA = range(11)
