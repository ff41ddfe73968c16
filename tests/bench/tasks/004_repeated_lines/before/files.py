def first(path):
    f = open(path)
    data = f.read()
    f.close()
    return data


def second(path):
    f = open(path)
    data = f.read()
    return data


def third(path):
    f = open(path)
    data = f.read()
    f.close()
    return data
