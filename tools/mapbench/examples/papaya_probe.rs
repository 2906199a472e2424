use std::time::Instant;
fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E3779B97F4A7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D049BB133111EB);
    z ^ (z >> 31)
}
type S = foldhash::fast::RandomState;
fn main() {
    let n = 2_000_000;
    for (mode, rm, cap) in [(1,0,0),(1,1,0),(1,0,4_000_000),(3,0,0),(3,1,0)] {
        let b = papaya::HashMap::builder().hasher(S::default()).capacity(cap);
        let b = if rm==1 { b.resize_mode(papaya::ResizeMode::Blocking) } else { b };
        let m: papaya::HashMap<u64, u64, S> = b.build();
        let t = Instant::now();
        for i in 0..n {
            let k = splitmix(i);
            let g = m.pin();
            match mode {
                0 => { g.insert(k, i); }
                1 => { g.get_or_insert_with(k, || i); }
                2 => { g.get(&k); g.insert(k, i); }
                _ => { g.try_insert(k, i).ok(); }
            }
        }
        println!("mode {mode} blocking={rm} cap={cap}: {:.2}s len {}", t.elapsed().as_secs_f64(), m.len());
    }
}
