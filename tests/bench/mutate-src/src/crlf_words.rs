use std::collections::HashMap;

/// Counts words, case-folded, skipping short ones.
pub fn count_words(text: &str, min_len: usize) -> HashMap<String, usize> {
	let mut counts = HashMap::new();
	for word in text.split_whitespace() {
		if word.len() < min_len {
			continue;
		}
		*counts.entry(word.to_lowercase()).or_insert(0) += 1;
	}
	counts
}

pub fn ratio(part: usize, whole: usize) -> f64 {
	if whole == 0 {
		return 0.0;
	}
	part as f64 / whole as f64
}
