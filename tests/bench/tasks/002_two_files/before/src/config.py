DEFAULTS = {
    "verbose": False,
    "jobs": 2,
}
