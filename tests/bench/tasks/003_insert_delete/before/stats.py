def mean(items):
    print(items)
    total = 0
    for x in items:
        total += x
    return total / len(items)
