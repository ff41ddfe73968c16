export function clamp(value, low, high) {
  return Math.min(Math.max(value, low), high);
}

export function total(items) {
  return items.reduce((acc, item) => acc + item.price, 0);
}
