-- Q7 with the join order forced (STRAIGHT_JOIN on the outer select: the derived table is
-- merged into it, so the FROM order is the join order), as study 004 forced another server's
-- plan on MariaDB. Tags as in `dbperf tpch qgen --template 7`; the lab checks that it
-- answers as the standard text.
select straight_join supp_nation, cust_nation, l_year, sum(volume) as revenue
from (select n1.n_name as supp_nation, n2.n_name as cust_nation, extract(year from l_shipdate) as l_year,
    l_extendedprice * (1 - l_discount) as volume
  from nation n1, supplier, lineitem, orders, customer, nation n2
  where s_suppkey = l_suppkey and o_orderkey = l_orderkey and c_custkey = o_custkey
    and s_nationkey = n1.n_nationkey and c_nationkey = n2.n_nationkey
    and ((n1.n_name = ':1' and n2.n_name = ':2') or (n1.n_name = ':2' and n2.n_name = ':1'))
    and l_shipdate between date '1995-01-01' and date '1996-12-31') as shipping
group by supp_nation, cust_nation, l_year
order by supp_nation, cust_nation, l_year;
