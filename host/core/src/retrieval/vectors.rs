//! Vector nearest neighbours, exact, in memory: int8 vectors scanned in full. Measured against
//! sqlite-vec's `vec0` tables at 100k chunks of 384 dimensions (`cargo bench -p seshat-cli --bench
//! retrieval`, BENCHMARKS.md), the scan over vectors held in memory is several times faster than
//! `vec0`'s (which reads its chunked BLOBs on every query), so the vectors live in plain BLOB rows
//! and a process loads them once per change.
//!
//! Encoding: the vector made unit-length, then each number as `round(x / scale)` in an `i8`
//! with `scale` the largest magnitude / 127; stored as the scale (4 bytes, little-endian `f32`)
//! then the numbers. The dot product of two such vectors times both scales is their cosine.

/// Encodes `v` (any length but 0, finite) for storage; the zero vector encodes as all zeros.
pub fn encode(v: &[f32]) -> Vec<u8> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    let max = v.iter().fold(0f32, |m, x| m.max(x.abs())) / if norm > 0.0 { norm } else { 1.0 };
    let scale = if max > 0.0 { max / 127.0 } else { 1.0 };
    let mut out = Vec::with_capacity(4 + v.len());
    out.extend_from_slice(&scale.to_le_bytes());
    for x in v {
        let unit = if norm > 0.0 { x / norm } else { 0.0 };
        out.push(((unit / scale).round().clamp(-127.0, 127.0) as i8) as u8);
    }
    out
}

/// The dimensions an encoded vector has.
pub fn dimensions(bytes: &[u8]) -> usize {
    bytes.len().saturating_sub(4)
}

/// Vectors held in memory for scanning.
#[derive(Debug, Default, Clone)]
pub struct VectorSet {
    dims: usize,
    ids: Vec<i64>,
    groups: Vec<i64>,
    scales: Vec<f32>,
    data: Vec<i8>,
}

impl VectorSet {
    /// An empty set of vectors of `dims` numbers.
    pub fn new(dims: usize) -> Self {
        VectorSet { dims, ..VectorSet::default() }
    }

    /// Adds an encoded vector for item `id` of group `group` (its document, for filtering);
    /// one of another length is skipped (returns false).
    pub fn push(&mut self, id: i64, group: i64, bytes: &[u8]) -> bool {
        if dimensions(bytes) != self.dims || self.dims == 0 {
            return false;
        }
        self.ids.push(id);
        self.groups.push(group);
        self.scales.push(f32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]));
        self.data.extend(bytes[4..].iter().map(|b| *b as i8));
        true
    }

    /// How many vectors it holds.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Their length.
    pub fn dims(&self) -> usize {
        self.dims
    }

    /// The `k` items nearest `query` (by cosine, best first, ties by id) among those whose
    /// group `allow` accepts — filtered before ranking, so a filter never empties a result the
    /// allowed items could fill. Returns (id, cosine).
    pub fn nearest(&self, query: &[f32], k: usize, allow: &dyn Fn(i64) -> bool) -> Vec<(i64, f32)> {
        if query.len() != self.dims || k == 0 {
            return Vec::new();
        }
        let q = encode(query);
        let q_scale = f32::from_le_bytes([q[0], q[1], q[2], q[3]]);
        let q: Vec<i8> = q[4..].iter().map(|b| *b as i8).collect();
        let mut best: Vec<(i64, f32)> = Vec::with_capacity(k + 1);
        let mut floor = f32::MIN;
        for (i, v) in self.data.chunks_exact(self.dims).enumerate() {
            if !allow(self.groups[i]) {
                continue;
            }
            let score = dot(v, &q) as f32 * self.scales[i] * q_scale;
            if best.len() == k && score <= floor {
                continue;
            }
            let id = self.ids[i];
            let at = best.partition_point(|&(bid, bs)| bs > score || (bs == score && bid < id));
            best.insert(at, (id, score));
            best.truncate(k);
            if best.len() == k {
                floor = best[k - 1].1;
            }
        }
        best
    }
}

/// The dot product of two int8 vectors, in blocks of 16 so the compiler vectorises it.
fn dot(a: &[i8], b: &[i8]) -> i32 {
    let mut sums = [0i32; 16];
    let (ac, ar) = a.split_at(a.len() / 16 * 16);
    let (bc, br) = b.split_at(ac.len());
    for (x, y) in ac.chunks_exact(16).zip(bc.chunks_exact(16)) {
        for j in 0..16 {
            sums[j] += i32::from(x[j]) * i32::from(y[j]);
        }
    }
    let mut total: i32 = sums.iter().sum();
    for (x, y) in ar.iter().zip(br) {
        total += i32::from(*x) * i32::from(*y);
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_keeps_the_cosine_and_nearest_filters_before_ranking() {
        let a = [1.0, 0.0, 0.0];
        let b = [0.6, 0.8, 0.0];
        let c = [0.0, 0.0, 2.0];
        let mut set = VectorSet::new(3);
        for (id, v) in [(1, &a), (2, &b), (3, &c)] {
            assert!(set.push(id, id * 10, &encode(v)));
        }
        assert!(!set.push(4, 40, &encode(&[1.0, 2.0])), "another length is refused");
        let all = set.nearest(&[1.0, 0.1, 0.0], 2, &|_| true);
        assert_eq!(all.iter().map(|x| x.0).collect::<Vec<_>>(), [1, 2]);
        assert!((all[0].1 - 0.995).abs() < 0.01, "{}", all[0].1);
        assert!((all[1].1 - (0.6 + 0.08) / 1.005).abs() < 0.02, "{}", all[1].1);
        // Filtering out document 10 lets the next ones in.
        let some = set.nearest(&[1.0, 0.1, 0.0], 2, &|g| g != 10);
        assert_eq!(some.iter().map(|x| x.0).collect::<Vec<_>>(), [2, 3]);
    }

    #[test]
    fn the_blocked_dot_product_matches_the_plain_one() {
        let a: Vec<i8> = (0..37).map(|i| (i * 7 % 255 - 127) as i8).collect();
        let b: Vec<i8> = (0..37).map(|i| (i * 13 % 255 - 127) as i8).collect();
        let plain: i32 = a.iter().zip(&b).map(|(x, y)| i32::from(*x) * i32::from(*y)).sum();
        assert_eq!(dot(&a, &b), plain);
    }
}
