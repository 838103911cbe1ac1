//! The 22 TPC-H queries, per server family, in one place, and how parameters go into them.
//!
//! Templates use qgen's tags: `:1`…`:10` for parameters and `:s` for the stream number
//! (Q15's view name, so concurrent streams do not collide); row limits are written
//! into the text (`LIMIT`). Statements of a query are separated by `;\n`: Q15's
//! `CREATE VIEW` runs before and its `DROP VIEW` after the measured SELECT.
//!
//! MySQL/MariaDB texts follow the spec's with the usual syntax changes (`INTERVAL 'n'
//! unit` arithmetic, `LIMIT`, Q13's derived-table column names as aliases). DBT-3's
//! PostgreSQL runs the same texts. DBT-3's
//! bug is not reproduced: Q15's window is `INTERVAL '3' MONTH` as the spec says, not
//! DBT-3's 90 days (which returns supplier 5912 instead of 8449 at SF 1).

use super::qgen::QueryParams;
use dbperf_driver::target::Family;

/// A query ready to run: statements before, the one whose rows are the answer, after.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rendered {
    /// Query number.
    pub query: u8,
    /// Run first (Q15's CREATE VIEW).
    pub setup: Vec<String>,
    /// The statement whose rows are the answer and whose time is measured.
    pub main: String,
    /// Run last, also after a failure or timeout (Q15's DROP VIEW).
    pub teardown: Vec<String>,
}

/// The template of query `q` for `family`.
pub fn template(family: Family, q: u8) -> &'static str {
    match family {
        // PostgreSQL takes the same texts: they use only standard date arithmetic
        // (`date 'd' + interval 'n' unit`), `extract`, `substring ... from ... for` and
        // `LIMIT`; `render` turns MySQL's quoted identifier (Q11's `value`) into "value".
        Family::Mysql | Family::Postgres => MYSQL[usize::from(q) - 1],
    }
}

/// Fills `p` (and stream `stream`) into query `p.query`'s template.
pub fn render(family: Family, p: &QueryParams, stream: u32) -> Rendered {
    render_template(template(family, p.query), family, p, stream)
}

fn render_template(template: &str, family: Family, p: &QueryParams, stream: u32) -> Rendered {
    let mut text = substitute(template, &p.values, stream);
    if family == Family::Postgres {
        text = text.replace('`', "\"");
    }
    let mut r = Rendered {
        query: p.query,
        setup: Vec::new(),
        main: String::new(),
        teardown: Vec::new(),
    };
    for stmt in text.split(";\n").map(str::trim).filter(|s| !s.is_empty()) {
        let lower = stmt.get(..6).unwrap_or("").to_ascii_lowercase();
        if lower == "create" {
            r.setup.push(stmt.to_string());
        } else if lower.starts_with("drop") {
            r.teardown.push(stmt.to_string());
        } else {
            r.main = stmt.to_string();
        }
    }
    r
}

/// Query texts given for some queries in place of the standard ones (`--queries-dir`): a
/// server's hinted text, e.g. study 004's `straight_join` forcing the join order that won.
/// Files are named `N.sql` or `qN.sql` (1 to 22) and use the standard templates' tags (`:1`…
/// for the parameters, `:s` for the stream), at most the parameters the standard text has.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QueryTexts {
    /// The directory they came from (shown in reports).
    pub dir: std::path::PathBuf,
    texts: std::collections::BTreeMap<u8, String>,
}

impl QueryTexts {
    /// Reads the query files in `dir`; any other `.sql` file, an empty one, or one using a
    /// parameter the query does not have is an error naming the file.
    pub fn load(dir: &std::path::Path) -> Result<QueryTexts, super::TpchError> {
        let bad = |what: String| super::TpchError::Invalid(what);
        let entries = std::fs::read_dir(dir).map_err(|e| {
            bad(format!(
                "--queries-dir {}: {e}; give a directory of N.sql files (1 to 22)",
                dir.display()
            ))
        })?;
        let mut texts = std::collections::BTreeMap::new();
        for entry in entries {
            let path = entry
                .map_err(|e| bad(format!("--queries-dir {}: {e}", dir.display())))?
                .path();
            if path.extension().and_then(|x| x.to_str()) != Some("sql") {
                continue;
            }
            let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
            let q = stem
                .strip_prefix('q')
                .or_else(|| stem.strip_prefix('Q'))
                .unwrap_or(stem)
                .parse::<u8>()
                .ok()
                .filter(|q| (1..=22).contains(q))
                .ok_or_else(|| {
                    bad(format!(
                        "{}: not a TPC-H query file; name hinted query texts N.sql or qN.sql, N from 1 to 22",
                        path.display()
                    ))
                })?;
            let text = std::fs::read_to_string(&path).map_err(|e| bad(format!("{}: {e}", path.display())))?;
            let text = text.trim().trim_end_matches(';').trim().to_string();
            if text.is_empty() {
                return Err(bad(format!(
                    "{}: empty; write Q{q}'s text there or remove the file",
                    path.display()
                )));
            }
            let allowed = max_parameter(template(Family::Mysql, q));
            if let Some(n) = (1..=10).find(|&n| n > allowed && uses_parameter(&text, n)) {
                return Err(bad(format!(
                    "{}: uses :{n} but Q{q} has {allowed} parameter{}; use the tags of the standard text \
                     (`dbperf tpch qgen --template {q}` prints it)",
                    path.display(),
                    if allowed == 1 { "" } else { "s" }
                )));
            }
            if texts.insert(q, text).is_some() {
                return Err(bad(format!(
                    "{}: Q{q} is given twice (N.sql and qN.sql); keep one",
                    dir.display()
                )));
            }
        }
        if texts.is_empty() {
            return Err(bad(format!(
                "--queries-dir {}: no query file (N.sql or qN.sql, N from 1 to 22) in it",
                dir.display()
            )));
        }
        Ok(QueryTexts {
            dir: dir.to_path_buf(),
            texts,
        })
    }

    /// The queries given a text of their own.
    pub fn queries(&self) -> impl Iterator<Item = u8> + '_ {
        self.texts.keys().copied()
    }

    /// The file query `q`'s text came from, `None` for the standard text.
    pub fn file(&self, q: u8) -> Option<std::path::PathBuf> {
        self.texts.get(&q)?;
        ["", "q", "Q"]
            .iter()
            .map(|p| self.dir.join(format!("{p}{q}.sql")))
            .find(|f| f.is_file())
            .or_else(|| Some(self.dir.join(format!("{q}.sql"))))
    }

    /// Query `p.query` with its own text when it has one, else the standard one.
    pub fn render(&self, family: Family, p: &QueryParams, stream: u32) -> Rendered {
        match self.texts.get(&p.query) {
            Some(t) => render_template(t, family, p, stream),
            None => render(family, p, stream),
        }
    }
}

/// The highest `:N` tag in `template`.
fn max_parameter(template: &str) -> usize {
    (1..=10).rev().find(|&n| uses_parameter(template, n)).unwrap_or(0)
}

/// Whether `text` has the tag `:n` (not the start of a longer number).
fn uses_parameter(text: &str, n: usize) -> bool {
    let tag = format!(":{n}");
    text.match_indices(&tag)
        .any(|(i, _)| !text[i + tag.len()..].starts_with(|c: char| c.is_ascii_digit()))
}

/// Replaces `:N` (the longest run of digits) with `values[N-1]` and `:s` with `stream`.
fn substitute(template: &str, values: &[String], stream: u32) -> String {
    let mut out = String::with_capacity(template.len() + 64);
    let mut rest = template;
    while let Some(i) = rest.find(':') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 {
            let n: usize = after[..digits].parse().unwrap_or(0);
            match values.get(n.wrapping_sub(1)) {
                Some(v) => out.push_str(v),
                None => panic!("query template uses :{n} but only {} values were given", values.len()),
            }
            rest = &after[digits..];
        } else if let Some(tail) = after.strip_prefix('s') {
            out.push_str(&stream.to_string());
            rest = tail;
        } else {
            out.push(':');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

const MYSQL: [&str; 22] = [
    // Q1 pricing summary report
    "select l_returnflag, l_linestatus, sum(l_quantity) as sum_qty, sum(l_extendedprice) as sum_base_price,
  sum(l_extendedprice * (1 - l_discount)) as sum_disc_price,
  sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) as sum_charge, avg(l_quantity) as avg_qty,
  avg(l_extendedprice) as avg_price, avg(l_discount) as avg_disc, count(*) as count_order
from lineitem
where l_shipdate <= date '1998-12-01' - interval ':1' day
group by l_returnflag, l_linestatus
order by l_returnflag, l_linestatus",
    // Q2 minimum cost supplier
    "select s_acctbal, s_name, n_name, p_partkey, p_mfgr, s_address, s_phone, s_comment
from part, supplier, partsupp, nation, region
where p_partkey = ps_partkey and s_suppkey = ps_suppkey and p_size = :1 and p_type like '%:2'
  and s_nationkey = n_nationkey and n_regionkey = r_regionkey and r_name = ':3'
  and ps_supplycost = (select min(ps_supplycost) from partsupp, supplier, nation, region
    where p_partkey = ps_partkey and s_suppkey = ps_suppkey and s_nationkey = n_nationkey
      and n_regionkey = r_regionkey and r_name = ':3')
order by s_acctbal desc, n_name, s_name, p_partkey
limit 100",
    // Q3 shipping priority
    "select l_orderkey, sum(l_extendedprice * (1 - l_discount)) as revenue, o_orderdate, o_shippriority
from customer, orders, lineitem
where c_mktsegment = ':1' and c_custkey = o_custkey and l_orderkey = o_orderkey
  and o_orderdate < date ':2' and l_shipdate > date ':2'
group by l_orderkey, o_orderdate, o_shippriority
order by revenue desc, o_orderdate
limit 10",
    // Q4 order priority checking
    "select o_orderpriority, count(*) as order_count
from orders
where o_orderdate >= date ':1' and o_orderdate < date ':1' + interval '3' month
  and exists (select * from lineitem where l_orderkey = o_orderkey and l_commitdate < l_receiptdate)
group by o_orderpriority
order by o_orderpriority",
    // Q5 local supplier volume
    "select n_name, sum(l_extendedprice * (1 - l_discount)) as revenue
from customer, orders, lineitem, supplier, nation, region
where c_custkey = o_custkey and l_orderkey = o_orderkey and l_suppkey = s_suppkey
  and c_nationkey = s_nationkey and s_nationkey = n_nationkey and n_regionkey = r_regionkey
  and r_name = ':1' and o_orderdate >= date ':2' and o_orderdate < date ':2' + interval '1' year
group by n_name
order by revenue desc",
    // Q6 forecasting revenue change
    "select sum(l_extendedprice * l_discount) as revenue
from lineitem
where l_shipdate >= date ':1' and l_shipdate < date ':1' + interval '1' year
  and l_discount between :2 - 0.01 and :2 + 0.01 and l_quantity < :3",
    // Q7 volume shipping
    "select supp_nation, cust_nation, l_year, sum(volume) as revenue
from (select n1.n_name as supp_nation, n2.n_name as cust_nation, extract(year from l_shipdate) as l_year,
    l_extendedprice * (1 - l_discount) as volume
  from supplier, lineitem, orders, customer, nation n1, nation n2
  where s_suppkey = l_suppkey and o_orderkey = l_orderkey and c_custkey = o_custkey
    and s_nationkey = n1.n_nationkey and c_nationkey = n2.n_nationkey
    and ((n1.n_name = ':1' and n2.n_name = ':2') or (n1.n_name = ':2' and n2.n_name = ':1'))
    and l_shipdate between date '1995-01-01' and date '1996-12-31') as shipping
group by supp_nation, cust_nation, l_year
order by supp_nation, cust_nation, l_year",
    // Q8 national market share
    "select o_year, sum(case when nation = ':1' then volume else 0 end) / sum(volume) as mkt_share
from (select extract(year from o_orderdate) as o_year, l_extendedprice * (1 - l_discount) as volume,
    n2.n_name as nation
  from part, supplier, lineitem, orders, customer, nation n1, nation n2, region
  where p_partkey = l_partkey and s_suppkey = l_suppkey and l_orderkey = o_orderkey
    and o_custkey = c_custkey and c_nationkey = n1.n_nationkey and n1.n_regionkey = r_regionkey
    and r_name = ':2' and s_nationkey = n2.n_nationkey
    and o_orderdate between date '1995-01-01' and date '1996-12-31' and p_type = ':3') as all_nations
group by o_year
order by o_year",
    // Q9 product type profit measure
    "select nation, o_year, sum(amount) as sum_profit
from (select n_name as nation, extract(year from o_orderdate) as o_year,
    l_extendedprice * (1 - l_discount) - ps_supplycost * l_quantity as amount
  from part, supplier, lineitem, partsupp, orders, nation
  where s_suppkey = l_suppkey and ps_suppkey = l_suppkey and ps_partkey = l_partkey
    and p_partkey = l_partkey and o_orderkey = l_orderkey and s_nationkey = n_nationkey
    and p_name like '%:1%') as profit
group by nation, o_year
order by nation, o_year desc",
    // Q10 returned item reporting
    "select c_custkey, c_name, sum(l_extendedprice * (1 - l_discount)) as revenue, c_acctbal, n_name,
  c_address, c_phone, c_comment
from customer, orders, lineitem, nation
where c_custkey = o_custkey and l_orderkey = o_orderkey and o_orderdate >= date ':1'
  and o_orderdate < date ':1' + interval '3' month and l_returnflag = 'R' and c_nationkey = n_nationkey
group by c_custkey, c_name, c_acctbal, c_phone, n_name, c_address, c_comment
order by revenue desc
limit 20",
    // Q11 important stock identification
    "select ps_partkey, sum(ps_supplycost * ps_availqty) as `value`
from partsupp, supplier, nation
where ps_suppkey = s_suppkey and s_nationkey = n_nationkey and n_name = ':1'
group by ps_partkey
having sum(ps_supplycost * ps_availqty) > (select sum(ps_supplycost * ps_availqty) * :2
  from partsupp, supplier, nation
  where ps_suppkey = s_suppkey and s_nationkey = n_nationkey and n_name = ':1')
order by `value` desc",
    // Q12 shipping modes and order priority
    "select l_shipmode,
  sum(case when o_orderpriority = '1-URGENT' or o_orderpriority = '2-HIGH' then 1 else 0 end) as high_line_count,
  sum(case when o_orderpriority <> '1-URGENT' and o_orderpriority <> '2-HIGH' then 1 else 0 end) as low_line_count
from orders, lineitem
where o_orderkey = l_orderkey and l_shipmode in (':1', ':2') and l_commitdate < l_receiptdate
  and l_shipdate < l_commitdate and l_receiptdate >= date ':3'
  and l_receiptdate < date ':3' + interval '1' year
group by l_shipmode
order by l_shipmode",
    // Q13 customer distribution
    "select c_count, count(*) as custdist
from (select c_custkey, count(o_orderkey) as c_count
  from customer left outer join orders on c_custkey = o_custkey and o_comment not like '%:1%:2%'
  group by c_custkey) as c_orders
group by c_count
order by custdist desc, c_count desc",
    // Q14 promotion effect
    "select 100.00 * sum(case when p_type like 'PROMO%' then l_extendedprice * (1 - l_discount) else 0 end)
  / sum(l_extendedprice * (1 - l_discount)) as promo_revenue
from lineitem, part
where l_partkey = p_partkey and l_shipdate >= date ':1' and l_shipdate < date ':1' + interval '1' month",
    // Q15 top supplier
    "create view revenue:s (supplier_no, total_revenue) as
  select l_suppkey, sum(l_extendedprice * (1 - l_discount))
  from lineitem
  where l_shipdate >= date ':1' and l_shipdate < date ':1' + interval '3' month
  group by l_suppkey;
select s_suppkey, s_name, s_address, s_phone, total_revenue
from supplier, revenue:s
where s_suppkey = supplier_no and total_revenue = (select max(total_revenue) from revenue:s)
order by s_suppkey;
drop view if exists revenue:s",
    // Q16 parts/supplier relationship
    "select p_brand, p_type, p_size, count(distinct ps_suppkey) as supplier_cnt
from partsupp, part
where p_partkey = ps_partkey and p_brand <> ':1' and p_type not like ':2%'
  and p_size in (:3, :4, :5, :6, :7, :8, :9, :10)
  and ps_suppkey not in (select s_suppkey from supplier where s_comment like '%Customer%Complaints%')
group by p_brand, p_type, p_size
order by supplier_cnt desc, p_brand, p_type, p_size",
    // Q17 small-quantity-order revenue
    "select sum(l_extendedprice) / 7.0 as avg_yearly
from lineitem, part
where p_partkey = l_partkey and p_brand = ':1' and p_container = ':2'
  and l_quantity < (select 0.2 * avg(l_quantity) from lineitem where l_partkey = p_partkey)",
    // Q18 large volume customer
    "select c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice, sum(l_quantity)
from customer, orders, lineitem
where o_orderkey in (select l_orderkey from lineitem group by l_orderkey having sum(l_quantity) > :1)
  and c_custkey = o_custkey and o_orderkey = l_orderkey
group by c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice
order by o_totalprice desc, o_orderdate
limit 100",
    // Q19 discounted revenue
    "select sum(l_extendedprice * (1 - l_discount)) as revenue
from lineitem, part
where (p_partkey = l_partkey and p_brand = ':1' and p_container in ('SM CASE', 'SM BOX', 'SM PACK', 'SM PKG')
    and l_quantity >= :4 and l_quantity <= :4 + 10 and p_size between 1 and 5
    and l_shipmode in ('AIR', 'AIR REG') and l_shipinstruct = 'DELIVER IN PERSON')
  or (p_partkey = l_partkey and p_brand = ':2' and p_container in ('MED BAG', 'MED BOX', 'MED PKG', 'MED PACK')
    and l_quantity >= :5 and l_quantity <= :5 + 10 and p_size between 1 and 10
    and l_shipmode in ('AIR', 'AIR REG') and l_shipinstruct = 'DELIVER IN PERSON')
  or (p_partkey = l_partkey and p_brand = ':3' and p_container in ('LG CASE', 'LG BOX', 'LG PACK', 'LG PKG')
    and l_quantity >= :6 and l_quantity <= :6 + 10 and p_size between 1 and 15
    and l_shipmode in ('AIR', 'AIR REG') and l_shipinstruct = 'DELIVER IN PERSON')",
    // Q20 potential part promotion
    "select s_name, s_address
from supplier, nation
where s_suppkey in (select ps_suppkey from partsupp
    where ps_partkey in (select p_partkey from part where p_name like ':1%')
      and ps_availqty > (select 0.5 * sum(l_quantity) from lineitem
        where l_partkey = ps_partkey and l_suppkey = ps_suppkey and l_shipdate >= date ':2'
          and l_shipdate < date ':2' + interval '1' year))
  and s_nationkey = n_nationkey and n_name = ':3'
order by s_name",
    // Q21 suppliers who kept orders waiting
    "select s_name, count(*) as numwait
from supplier, lineitem l1, orders, nation
where s_suppkey = l1.l_suppkey and o_orderkey = l1.l_orderkey and o_orderstatus = 'F'
  and l1.l_receiptdate > l1.l_commitdate
  and exists (select * from lineitem l2 where l2.l_orderkey = l1.l_orderkey and l2.l_suppkey <> l1.l_suppkey)
  and not exists (select * from lineitem l3 where l3.l_orderkey = l1.l_orderkey
    and l3.l_suppkey <> l1.l_suppkey and l3.l_receiptdate > l3.l_commitdate)
  and s_nationkey = n_nationkey and n_name = ':1'
group by s_name
order by numwait desc, s_name
limit 100",
    // Q22 global sales opportunity
    "select cntrycode, count(*) as numcust, sum(c_acctbal) as totacctbal
from (select substring(c_phone from 1 for 2) as cntrycode, c_acctbal
  from customer
  where substring(c_phone from 1 for 2) in (':1', ':2', ':3', ':4', ':5', ':6', ':7')
    and c_acctbal > (select avg(c_acctbal) from customer where c_acctbal > 0.00
      and substring(c_phone from 1 for 2) in (':1', ':2', ':3', ':4', ':5', ':6', ':7'))
    and not exists (select * from orders where o_custkey = c_custkey)) as custsale
group by cntrycode
order by cntrycode",
];

#[cfg(test)]
mod tests {
    use super::super::qgen::validation_params;
    use super::*;

    #[test]
    fn own_texts_replace_the_standard_ones_and_bad_files_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| std::fs::write(dir.path().join(name), text).unwrap();
        write("q7.sql", "select straight_join ':1', ':2' from lineitem;\n");
        write("notes.txt", "not a query");
        let texts = QueryTexts::load(dir.path()).unwrap();
        assert_eq!(texts.queries().collect::<Vec<_>>(), vec![7]);
        assert_eq!(texts.file(7), Some(dir.path().join("q7.sql")));
        assert_eq!(texts.file(6), None);
        let p7 = validation_params(7, 1.0);
        let r = texts.render(Family::Mysql, &p7, 0);
        assert_eq!(r.main, "select straight_join 'FRANCE', 'GERMANY' from lineitem");
        // Queries without a file keep the standard text.
        let p6 = validation_params(6, 1.0);
        assert_eq!(texts.render(Family::Mysql, &p6, 0), render(Family::Mysql, &p6, 0));

        let err = |files: &[(&str, &str)]| {
            let d = tempfile::tempdir().unwrap();
            for (n, t) in files {
                std::fs::write(d.path().join(n), t).unwrap();
            }
            QueryTexts::load(d.path()).unwrap_err().to_string()
        };
        assert!(err(&[("23.sql", "select 1")]).contains("23.sql: not a TPC-H query file"));
        assert!(err(&[("7.sql", " ;\n")]).contains("7.sql: empty"));
        // Q7 has two parameters: :3 is not one of them (:10-style longer tags are told apart).
        let e = err(&[("7.sql", "select ':3' from t")]);
        assert!(e.contains("uses :3 but Q7 has 2 parameters"), "{e}");
        assert!(err(&[("7.sql", "select 1"), ("q7.sql", "select 2")]).contains("Q7 is given twice"));
        assert!(err(&[]).contains("no query file"));
        assert!(QueryTexts::load(&dir.path().join("missing"))
            .unwrap_err()
            .to_string()
            .contains("--queries-dir"));
        assert_eq!(max_parameter(template(Family::Mysql, 16)), 10);
        assert!(!uses_parameter("select ':10'", 1));
    }

    #[test]
    fn every_parameter_is_filled_and_q15_is_split() {
        for q in 1..=22 {
            let r = render(Family::Mysql, &validation_params(q, 1.0), 3);
            assert!(!r.main.contains(':'), "Q{q}: {}", r.main);
        }
        let q16 = render(Family::Mysql, &validation_params(16, 1.0), 0);
        assert!(q16.main.contains("p_size in (49, 14, 23, 45, 19, 3, 36, 9)"));
        let q15 = render(Family::Mysql, &validation_params(15, 1.0), 3);
        assert_eq!(q15.setup.len(), 1);
        assert!(q15.setup[0].starts_with("create view revenue3 "));
        assert_eq!(q15.teardown, vec!["drop view if exists revenue3".to_string()]);
        assert!(q15.main.contains("interval '3' month") || q15.setup[0].contains("interval '3' month"));
    }
}
