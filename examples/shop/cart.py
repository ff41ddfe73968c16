"""A shopping cart."""


class Cart:
    def __init__(self):
        self.items = []

    def add(self, item, quantity=1):
        self.items.append((item, quantity))

    def total(self):
        result = 0
        for item, quantity in self.items:
            result += item.price
        return result
