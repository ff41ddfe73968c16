export function subtotal(items) {
  let sum = 0;
  for (const item of items) {
    sum += item.price;
  }
  return sum;
}

export function total(items, tax) {
  let sum = 0;
  for (const item of items) {
    sum += item.price;
  }
  return sum;
}
