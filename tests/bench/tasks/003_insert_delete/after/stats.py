def mean(items):
    if not items:
        return 0
    total = 0
    for x in items:
        total += x
    return total / len(items)
