"""A small inventory: stock levels, reservations and reorders."""

REORDER_LEVEL = 5
MAX_ITEMS = 100


class Inventory:
    def __init__(self, name, strict=False):
        self.name = name
        self.strict = strict
        self.items = {}
        self.log = []

    def add(self, sku, count):
        if count <= 0:
            raise ValueError("count must be positive")
        total = self.items.get(sku, 0) + count
        if total > MAX_ITEMS:
            total = MAX_ITEMS
        self.items[sku] = total
        self.log.append(("add", sku))
        return total

    def reserve(self, sku, count):
        have = self.items.get(sku, 0)
        if have < count:
            return False
        self.items[sku] = have - count
        self.log.append(("reserve", sku))
        return True

    def needs_reorder(self, sku):
        return self.items.get(sku, 0) <= REORDER_LEVEL

    def describe(self, sku):
        if sku == "":
            return None
        if self.strict:
            label = sku.upper()
        else:
            label = sku.lower()
        return format_line(label, self.items.get(sku, 0))


def format_line(label, count):
    width = 12
    padded = label.ljust(width)
    return padded + str(count)


def clamp(value, low, high):
    if value < low:
        return low
    if value > high:
        return high
    return value
