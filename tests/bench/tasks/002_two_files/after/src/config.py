DEFAULTS = {
    "debug": False,
    "jobs": 2,
}
