//! A fixed-capacity ring buffer.

pub const CAPACITY: usize = 8;

pub struct Ring {
    items: Vec<u32>,
    head: usize,
    len: usize,
    overwrite: bool,
}

impl Ring {
    pub fn new(overwrite: bool) -> Ring {
        Ring {
            items: vec![0; CAPACITY],
            head: 0,
            len: 0,
            overwrite,
        }
    }

    pub fn push(&mut self, value: u32) -> bool {
        if self.len == CAPACITY && !self.overwrite {
            return false;
        }
        let slot = (self.head + self.len) % CAPACITY;
        self.items[slot] = value;
        if self.len < CAPACITY {
            self.len += 1;
        } else {
            self.head = (self.head + 1) % CAPACITY;
        }
        true
    }

    pub fn pop(&mut self) -> Option<u32> {
        if self.len == 0 {
            return None;
        }
        let value = self.items[self.head];
        self.head = (self.head + 1) % CAPACITY;
        self.len -= 1;
        Some(value)
    }

    pub fn is_full(&self) -> bool {
        self.len >= CAPACITY
    }
}

pub fn window(values: &[u32], start: usize, width: usize) -> Vec<u32> {
    let end = start + width;
    let mut out = Vec::new();
    for (i, v) in values.iter().enumerate() {
        if i >= start && i < end {
            out.push(*v);
        }
    }
    out
}

pub fn copy_into(dst: &mut Vec<u32>, src: &[u32]) {
    dst.clear();
    dst.extend_from_slice(src);
}

#[cfg(test)]
mod tests {
    #[test]
    fn capacity() {
        assert_eq!(super::CAPACITY, 8);
    }
}
