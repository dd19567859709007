// pgJDBC against ebbflow: connect, prepared DML and queries,
// ResultSetMetaData, and the DatabaseMetaData calls BI tools (DBeaver,
// Metabase) browse with: getSchemas, getTables (tables, views and MVs as
// "MATERIALIZED VIEW"), getColumns, getPrimaryKeys and getTypeInfo.
// Usage: java -cp postgresql.jar JdbcTest.java PORT
import java.sql.*;
import java.util.*;

public class JdbcTest {
    static void check(boolean ok, String what) {
        if (!ok) throw new AssertionError(what);
    }

    public static void main(String[] args) throws Exception {
        String url = "jdbc:postgresql://127.0.0.1:" + args[0] + "/dev";
        Properties props = new Properties();
        props.setProperty("user", "root");
        props.setProperty("prepareThreshold", "1");
        try (Connection c = DriverManager.getConnection(url, props)) {
            try (Statement s = c.createStatement()) {
                s.execute("create table jt (id int primary key, name varchar, amount numeric, at timestamp)");
                s.execute("create view jv as select id, name from jt where id > 1");
                s.execute("create materialized view jm as select count(*) as n from jt");
            }
            try (PreparedStatement p = c.prepareStatement("insert into jt values (?, ?, ?, ?)")) {
                for (int i = 1; i <= 5; i++) {
                    p.setInt(1, i);
                    p.setString(2, "n" + i);
                    p.setBigDecimal(3, new java.math.BigDecimal(i + ".50"));
                    p.setTimestamp(4, Timestamp.valueOf("2024-01-0" + i + " 10:00:00"));
                    check(p.executeUpdate() == 1, "insert count");
                }
            }
            try (Statement s = c.createStatement()) {
                s.execute("flush");
            }
            try (PreparedStatement p = c.prepareStatement("select id, name, amount, at from jt where id >= ? order by id")) {
                for (int round = 0; round < 3; round++) {
                    p.setInt(1, 4);
                    try (ResultSet rs = p.executeQuery()) {
                        ResultSetMetaData md = rs.getMetaData();
                        check(md.getColumnCount() == 4, "column count");
                        check(md.getColumnName(2).equals("name"), "column name");
                        check(md.getColumnType(1) == Types.INTEGER, "int type");
                        check(md.getColumnType(2) == Types.VARCHAR, "varchar type");
                        check(md.getColumnType(3) == Types.NUMERIC, "numeric type");
                        check(md.getColumnType(4) == Types.TIMESTAMP, "timestamp type");
                        check(rs.next() && rs.getInt(1) == 4 && rs.getString(2).equals("n4"), "row 4");
                        check(rs.getBigDecimal(3).compareTo(new java.math.BigDecimal("4.50")) == 0, "amount");
                        check(rs.next() && rs.getInt(1) == 5, "row 5");
                        check(!rs.next(), "two rows");
                    }
                }
            }
            try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("select count(*) from jv")) {
                check(rs.next() && rs.getLong(1) == 4, "view rows");
            }

            // timestamptz: an OffsetDateTime in and out (pgJDBC sends the
            // JVM's zone as the startup TimeZone); the same instant comes
            // back, in text and in binary.
            try (Statement s = c.createStatement()) {
                s.execute("create table jz (id int primary key, t timestamptz)");
            }
            java.time.OffsetDateTime odt = java.time.OffsetDateTime.parse("2024-03-10T02:30:00.123456-05:00");
            try (PreparedStatement p = c.prepareStatement("insert into jz values (?, ?)")) {
                p.setInt(1, 1);
                p.setObject(2, odt);
                check(p.executeUpdate() == 1, "insert timestamptz");
            }
            try (Statement s = c.createStatement()) {
                s.execute("flush");
            }
            for (int round = 0; round < 3; round++) {
                try (PreparedStatement p = c.prepareStatement("select t, t + interval '1 hour' from jz where id = ?")) {
                    p.setInt(1, 1);
                    try (ResultSet rs = p.executeQuery()) {
                        check(rs.getMetaData().getColumnTypeName(1).equals("timestamptz"), "timestamptz type name");
                        check(rs.next(), "timestamptz row");
                        java.time.OffsetDateTime got = rs.getObject(1, java.time.OffsetDateTime.class);
                        check(got.isEqual(odt), "timestamptz round trip: " + got);
                        check(rs.getTimestamp(1).toInstant().equals(odt.toInstant()), "getTimestamp instant");
                        check(rs.getObject(2, java.time.OffsetDateTime.class).isEqual(odt.plusHours(1)), "plus an hour");
                    }
                }
            }

            // uuid: java.util.UUID in and out.
            try (Statement s = c.createStatement()) {
                s.execute("create table ju (u uuid primary key, n int)");
            }
            UUID uid = UUID.fromString("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11");
            try (PreparedStatement p = c.prepareStatement("insert into ju values (?, ?)")) {
                p.setObject(1, uid);
                p.setInt(2, 7);
                check(p.executeUpdate() == 1, "insert uuid");
            }
            try (Statement s = c.createStatement()) {
                s.execute("flush");
            }
            for (int round = 0; round < 3; round++) {
                try (PreparedStatement p = c.prepareStatement("select u, n from ju where u = ?")) {
                    p.setObject(1, uid);
                    try (ResultSet rs = p.executeQuery()) {
                        check(rs.next() && rs.getObject(1, UUID.class).equals(uid) && rs.getInt(2) == 7, "uuid round trip");
                    }
                }
            }

            // bytea: byte[] in and out.
            try (Statement s = c.createStatement()) {
                s.execute("create table jb (id int primary key, b bytea)");
            }
            byte[] blob = new byte[300];
            for (int i = 0; i < blob.length; i++) blob[i] = (byte) (i * 7);
            try (PreparedStatement p = c.prepareStatement("insert into jb values (?, ?)")) {
                p.setInt(1, 1);
                p.setBytes(2, blob);
                check(p.executeUpdate() == 1, "insert bytea");
            }
            try (Statement s = c.createStatement()) {
                s.execute("flush");
            }
            for (int round = 0; round < 3; round++) {
                try (PreparedStatement p = c.prepareStatement("select b, length(b) from jb where id = ?")) {
                    p.setInt(1, 1);
                    try (ResultSet rs = p.executeQuery()) {
                        check(rs.next() && Arrays.equals(rs.getBytes(1), blob) && rs.getInt(2) == 300, "bytea round trip");
                    }
                }
            }

            // time: LocalTime in and out.
            try (Statement s = c.createStatement()) {
                s.execute("create table jt2 (id int primary key, t time)");
            }
            java.time.LocalTime lt = java.time.LocalTime.parse("23:59:58.123456");
            try (PreparedStatement p = c.prepareStatement("insert into jt2 values (?, ?)")) {
                p.setInt(1, 1);
                p.setObject(2, lt);
                check(p.executeUpdate() == 1, "insert time");
            }
            try (Statement s = c.createStatement()) {
                s.execute("flush");
            }
            for (int round = 0; round < 3; round++) {
                try (PreparedStatement p = c.prepareStatement("select t from jt2 where id = ?")) {
                    p.setInt(1, 1);
                    try (ResultSet rs = p.executeQuery()) {
                        check(rs.next() && rs.getObject(1, java.time.LocalTime.class).equals(lt), "time round trip");
                    }
                }
            }

            // jsonb: a PGobject in, text out.
            try (Statement s = c.createStatement()) {
                s.execute("create table jj (id int primary key, j jsonb)");
            }
            try (PreparedStatement p = c.prepareStatement("insert into jj values (?, ?)")) {
                org.postgresql.util.PGobject json = new org.postgresql.util.PGobject();
                json.setType("jsonb");
                json.setValue("{\"b\": [1, 2.50, null], \"a\": \"x\"}");
                p.setInt(1, 1);
                p.setObject(2, json);
                check(p.executeUpdate() == 1, "insert jsonb");
            }
            try (Statement s = c.createStatement()) {
                s.execute("flush");
            }
            for (int round = 0; round < 3; round++) {
                try (PreparedStatement p = c.prepareStatement("select j, j ->> 'a', j -> 'b' -> 1 from jj where id = ?")) {
                    p.setInt(1, 1);
                    try (ResultSet rs = p.executeQuery()) {
                        check(rs.getMetaData().getColumnTypeName(1).equals("jsonb"), "jsonb type name");
                        check(rs.next(), "jsonb row");
                        check(rs.getString(1).equals("{\"a\": \"x\", \"b\": [1, 2.50, null]}"), "jsonb text " + rs.getString(1));
                        check(rs.getString(2).equals("x"), "->>");
                        check(rs.getString(3).equals("2.50"), "-> ->");
                    }
                }
            }

            DatabaseMetaData meta = c.getMetaData();
            Set<String> schemas = new HashSet<>();
            try (ResultSet rs = meta.getSchemas()) {
                while (rs.next()) schemas.add(rs.getString("TABLE_SCHEM"));
            }
            check(schemas.contains("public") && schemas.contains("pg_catalog"), "schemas " + schemas);

            Map<String, String> tables = new HashMap<>();
            try (ResultSet rs = meta.getTables(null, "public", "%", null)) {
                while (rs.next()) tables.put(rs.getString("TABLE_NAME"), rs.getString("TABLE_TYPE"));
            }
            check("TABLE".equals(tables.get("jt")), "jt is a TABLE: " + tables);
            check("VIEW".equals(tables.get("jv")), "jv is a VIEW: " + tables);
            check("MATERIALIZED VIEW".equals(tables.get("jm")), "jm is a MATERIALIZED VIEW: " + tables);

            List<String> cols = new ArrayList<>();
            try (ResultSet rs = meta.getColumns(null, "public", "jt", "%")) {
                while (rs.next()) {
                    cols.add(rs.getString("COLUMN_NAME") + ":" + rs.getString("TYPE_NAME") + ":" + rs.getString("IS_NULLABLE"));
                }
            }
            check(cols.size() == 4, "columns " + cols);
            check(cols.get(0).startsWith("id:int4:NO"), "id column " + cols);
            check(cols.get(1).startsWith("name:varchar:YES"), "name column " + cols);
            check(cols.get(2).startsWith("amount:numeric:YES"), "amount column " + cols);

            // getPrimaryKeys: pgJDBC expands pg_index.indkey with the
            // set-returning information_schema._pg_expandarray.
            List<String> pk = new ArrayList<>();
            try (ResultSet rs = meta.getPrimaryKeys(null, "public", "jt")) {
                while (rs.next()) {
                    pk.add(rs.getString("COLUMN_NAME") + ":" + rs.getShort("KEY_SEQ") + ":" + rs.getString("PK_NAME"));
                }
            }
            check(pk.equals(List.of("id:1:jt_pkey")), "primary key of jt " + pk);
            try (Statement s = c.createStatement()) {
                s.execute("create table jk (a int, b varchar, c int, primary key (c, a))");
            }
            pk.clear();
            try (ResultSet rs = meta.getPrimaryKeys(null, "public", "jk")) {
                while (rs.next()) {
                    pk.add(rs.getString("TABLE_NAME") + "." + rs.getString("COLUMN_NAME") + ":" + rs.getShort("KEY_SEQ"));
                }
            }
            check(pk.equals(List.of("jk.c:1", "jk.a:2")), "primary key of jk " + pk);
            pk.clear();
            try (ResultSet rs = meta.getPrimaryKeys(null, "public", "jv")) {
                while (rs.next()) pk.add(rs.getString("COLUMN_NAME"));
            }
            check(pk.isEmpty(), "a view has no primary key " + pk);

            // getTypeInfo: pgJDBC filters pg_type with a correlated scalar
            // subquery on pg_class.
            Map<String, Integer> typeInfo = new HashMap<>();
            try (ResultSet rs = meta.getTypeInfo()) {
                while (rs.next()) typeInfo.put(rs.getString("TYPE_NAME"), rs.getInt("DATA_TYPE"));
            }
            check(Integer.valueOf(Types.INTEGER).equals(typeInfo.get("int4")), "int4 " + typeInfo);
            check(Integer.valueOf(Types.BIGINT).equals(typeInfo.get("int8")), "int8 " + typeInfo);
            check(Integer.valueOf(Types.SMALLINT).equals(typeInfo.get("int2")), "int2 " + typeInfo);
            check(Integer.valueOf(Types.VARCHAR).equals(typeInfo.get("text")), "text " + typeInfo);
            check(Integer.valueOf(Types.VARCHAR).equals(typeInfo.get("varchar")), "varchar " + typeInfo);
            check(Integer.valueOf(Types.NUMERIC).equals(typeInfo.get("numeric")), "numeric " + typeInfo);
            check(Integer.valueOf(Types.DOUBLE).equals(typeInfo.get("float8")), "float8 " + typeInfo);
            check(Integer.valueOf(Types.BIT).equals(typeInfo.get("bool")), "bool " + typeInfo);
            check(Integer.valueOf(Types.DATE).equals(typeInfo.get("date")), "date " + typeInfo);
            check(Integer.valueOf(Types.TIMESTAMP).equals(typeInfo.get("timestamp")), "timestamp " + typeInfo);
            check(meta.getDatabaseProductName().equals("PostgreSQL"), "product name");
        }
        System.out.println("jdbc: ok");
    }
}
