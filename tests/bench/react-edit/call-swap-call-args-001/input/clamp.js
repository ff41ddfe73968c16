export function clamp(value, low, high) {
  return Math.min(high, Math.max(value, low));
}

export function total(items) {
  return items.reduce((acc, item) => acc + item.price, 0);
}
