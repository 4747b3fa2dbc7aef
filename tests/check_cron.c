/*
 * check_cron.c: the Check suite for common/cron.c.  The parser is tested
 * against a table of exact error messages, the boundary values of every
 * field, names, aliases and white space; the day rule against the examples
 * of ARCHITECTURE.md; cron_next_wall() against known answers and, for
 * thousands of random expressions, against an oracle written here that walks
 * the calendar minute by minute (skipping a whole day or hour only when the
 * day or hour does not match) with gmtime_r(), sharing no code with cron.c.
 * The generator also predicts each field's bit set, so the parser is checked
 * against an independent reading of every expression it makes.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cronvisor.h"
#include "cvtest.h"

#define NEVER_MSG                                                              \
	"the expression never fires: no month in the month field has any day " \
	"in the day-of-month field"
#define EXT_MSG                                                                \
	"is not cron syntax (?, L, W, # and H are Quartz and Jenkins "         \
	"extensions)"
#define FIELDS_MSG                                                             \
	"expected 5 fields (minute hour day-of-month month day-of-week), got "
#define ALIAS_MSG                                                              \
	" (the aliases are @yearly, @annually, @monthly, @weekly, @daily, "    \
	"@midnight and @hourly, in lowercase)"
#define ALL_MIN   ((UINT64_C(1) << 60) - 1)
#define ALL_HOUR  ((UINT32_C(1) << 24) - 1)
#define ALL_DOM   UINT32_C(0xfffffffe)
#define ALL_MONTH 0x1ffe
#define ALL_DOW   0x7f

/* The wall time of a UTC date, by timegm(): independent of cron.c. */
static int64_t
wall(int y, int mo, int d, int h, int mi)
{
	struct tm tm = {0};

	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	return (int64_t)timegm(&tm);
}

/* Parses s, failing the test with the error if it does not parse. */
static struct cron
parse_ok(const char *s)
{
	struct cron c;
	char err[CV_ERRLEN] = "";

	ck_assert_msg(cron_parse(s, &c, err, sizeof(err)) == 0,
	    "\"%s\" failed: %s", s, err);
	return c;
}

/* Checks that s fails with exactly msg and leaves the output untouched. */
static void
parse_err(const char *s, const char *msg)
{
	struct cron c, before;
	char err[CV_ERRLEN] = "";

	memset(&c, 0xa5, sizeof(c));
	before = c;
	ck_assert_msg(
	    cron_parse(s, &c, err, sizeof(err)) == -1, "\"%s\" parsed", s);
	ck_assert_msg(strcmp(err, msg) == 0, "\"%s\": got \"%s\", want \"%s\"",
	    s, err, msg);
	ck_assert(memcmp(&c, &before, sizeof(c)) == 0);
}

#define SUN_STEP_MSG                                                           \
	"never fires: with a step, cron does not read an end of 0 or SUN as "  \
	"Sunday (write 7 instead)"

static const struct {
	const char *expr; /* the expression */
	const char *msg;  /* its exact error */
} errors[] = {
    {"", "expression is empty"},
    {" \t\n ", "expression is empty"},
    {"* * * *", FIELDS_MSG "4"},
    {"* * * * * *", FIELDS_MSG "6"},
    {"0 0 1 1 * 2030", FIELDS_MSG "6"},
    {"0", FIELDS_MSG "1"},
    {"@reboot", "@reboot is not supported"},
    {"@reboot /bin/true", "@reboot is not supported"},
    {"@DAILY", "unknown alias @DAILY" ALIAS_MSG},
    {"@Hourly", "unknown alias @Hourly" ALIAS_MSG},
    {"@every", "unknown alias @every" ALIAS_MSG},
    {"@", "unknown alias @" ALIAS_MSG},
    {"@daily *", "@daily takes no fields"},
    {"@hourly\t0 * * * *", "@hourly takes no fields"},
    {"60 * * * *", "minute: 60 is out of range 0-59"},
    {"* 24 * * *", "hour: 24 is out of range 0-23"},
    {"* * 0 * *", "day-of-month: 0 is out of range 1-31"},
    {"* * 32 * *", "day-of-month: 32 is out of range 1-31"},
    {"* * * 0 *", "month: 0 is out of range 1-12"},
    {"* * * 13 *", "month: 13 is out of range 1-12"},
    {"* * * * 8", "day-of-week: 8 is out of range 0-7"},
    {"0-60 * * * *", "minute: 60 is out of range 0-59"},
    {"* 5-24/2 * * *", "hour: 24 is out of range 0-23"},
    {"99999999999999999999 * * * *",
        "minute: 99999999999999999999 is out of range 0-59"},
    {"5/10 * * * *", "minute: a step needs * or a range: 5/10"},
    {"* * * JAN/2 *", "month: a step needs * or a range: JAN/2"},
    {"*/0 * * * *", "minute: step 0 must be at least 1"},
    {"* 1-5/00 * * *", "hour: step 00 must be at least 1"},
    {"*/ * * * *", "minute: missing step after / in */"},
    {"*/x * * * *", "minute: step x is not a number"},
    {"*/2/3 * * * *", "minute: step 2/3 is not a number"},
    {"*/MON * * * 1", "minute: step MON is not a number"},
    {"* * * * */MON", "day-of-week: step MON is not a number"},
    {"1,,2 * * * *", "minute: empty list element"},
    {",1 * * * *", "minute: empty list element"},
    {"* 1, * * *", "hour: empty list element"},
    {"* * , * *", "day-of-month: empty list element"},
    {"* * * FOO *", "month: unknown name FOO"},
    {"* * * * MONDAY", "day-of-week: MONDAY is not a three-letter name"},
    {"* * * JANUARY *", "month: JANUARY is not a three-letter name"},
    {"* * * * MO", "day-of-week: MO is not a three-letter name"},
    {"* * * * FRI-MON", "day-of-week: reversed range FRI-MON"},
    {"* * * * 6-1", "day-of-week: reversed range 6-1"},
    {"* * * * 7-6", "day-of-week: reversed range 7-6"},
    /* cronie reads an end of 0 as Sunday only without a step. */
    {"* * * * 1-0/2", "day-of-week: 1-0/2 " SUN_STEP_MSG},
    {"* * * * FRI-SUN/2", "day-of-week: FRI-SUN/2 " SUN_STEP_MSG},
    {"* * * * 5-0/2", "day-of-week: 5-0/2 " SUN_STEP_MSG},
    {"* * * * MON-SUN/3", "day-of-week: MON-SUN/3 " SUN_STEP_MSG},
    {"* * * * 1,fri-sun/1", "day-of-week: fri-sun/1 " SUN_STEP_MSG},
    {"* 22-2 * * *", "hour: reversed range 22-2"},
    {"5-0 * * * *", "minute: reversed range 5-0"},
    {"* 5-0 * * *", "hour: reversed range 5-0"},
    {"* * * DEC-JAN *", "month: reversed range DEC-JAN"},
    {"* * 31-1 * *", "day-of-month: reversed range 31-1"},
    {"* * * * JAN", "day-of-week: unknown name JAN"},
    {"* * * MON *", "month: unknown name MON"},
    {"JAN * * * *", "minute: JAN is not a number"},
    {"* MON * * *", "hour: MON is not a number"},
    {"* * MON * *", "day-of-month: MON is not a number"},
    {"5a * * * *", "minute: 5a is not a number"},
    {"0x10 * * * *", "minute: 0x10 is not a number"},
    {"* * * * 5a", "day-of-week: 5a is not a number or a name"},
    {"* * * 1st *", "month: 1st is not a number or a name"},
    {"* * ? * *", "day-of-month: ? " EXT_MSG},
    {"* * * * ?", "day-of-week: ? " EXT_MSG},
    {"* * L * *", "day-of-month: L " EXT_MSG},
    {"* * 15W * *", "day-of-month: 15W " EXT_MSG},
    {"* * LW * *", "day-of-month: LW " EXT_MSG},
    {"* * * * 5L", "day-of-week: 5L " EXT_MSG},
    {"* * * * 5#3", "day-of-week: 5#3 " EXT_MSG},
    {"* * * * MON#1", "day-of-week: MON#1 " EXT_MSG},
    {"H * * * *", "minute: H " EXT_MSG},
    {"H/15 * * * *", "minute: H/15 " EXT_MSG},
    {"H(0-29)/10 * * * *", "minute: H(0-29)/10 " EXT_MSG},
    {"0 0 * * 1,L", "day-of-week: L " EXT_MSG},
    {"* * * * 1-", "day-of-week: malformed range 1-"},
    {"-1 * * * *", "minute: malformed range -1"},
    {"1-2-3 * * * *", "minute: malformed range 1-2-3"},
    {"1--3 * * * *", "minute: malformed range 1--3"},
    {"** * * * *", "minute: misplaced * in **"},
    {"*5 * * * *", "minute: misplaced * in *5"},
    {"5-* * * * *", "minute: misplaced * in 5-*"},
    {"*-5/2 * * * *", "minute: misplaced * in *-5"},
    {"1.5 * * * *", "minute: unexpected character '.' in 1.5"},
    {"+5 * * * *", "minute: unexpected character '+' in +5"},
    {"* * * * ~", "day-of-week: unexpected character '~' in ~"},
    {"0~30 * * * *", "minute: unexpected character '~' in 0~30"},
    {"* * * * *\n* * * * *", "unexpected byte 0x0a at offset 9"},
    {"* * *\r* *", "unexpected byte 0x0d at offset 5"},
    {"\xc3\xa9 * * * *", "unexpected byte 0xc3 at offset 0"},
    {"0 0 30 2 *", NEVER_MSG},
    {"0 0 31 2 *", NEVER_MSG},
    {"0 0 30,31 FEB *", NEVER_MSG},
    {"0 0 31 4,6 *", NEVER_MSG},
    {"0 0 31 4,6,9,11 *", NEVER_MSG},
    {"0 0 30 2 */2", NEVER_MSG},
    {"0 0 30 2 */1", NEVER_MSG},
    {"0 0 30-31 2 *", NEVER_MSG},
};

START_TEST(test_errors)
{
	for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); i++)
		parse_err(errors[i].expr, errors[i].msg);
}
END_TEST

START_TEST(test_error_buffer)
{
	struct cron c;
	char err[8];

	/* A NULL buffer is allowed; a short one is cut and terminated. */
	ck_assert_int_eq(cron_parse("60 * * * *", &c, NULL, 0), -1);
	ck_assert_int_eq(cron_parse("60 * * * *", &c, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "minute:");
	ck_assert_int_eq(cron_parse("", &c, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "express");
	err[0] = 'x';
	ck_assert_int_eq(cron_parse("60 * * * *", &c, err, 1), -1);
	ck_assert_str_eq(err, "");
}
END_TEST

/* Checks every bit set and the flags of a parse. */
static void
expect(const char *s, uint64_t mi, uint32_t h, uint32_t dom, uint16_t mo,
    uint8_t dow, unsigned flags)
{
	struct cron c = parse_ok(s);

	ck_assert_msg(c.minute == mi, "%s: minute %jx", s, (uintmax_t)c.minute);
	ck_assert_msg(c.hour == h, "%s: hour %x", s, c.hour);
	ck_assert_msg(c.dom == dom, "%s: dom %x", s, c.dom);
	ck_assert_msg(c.month == mo, "%s: month %x", s, c.month);
	ck_assert_msg(c.dow == dow, "%s: dow %x", s, c.dow);
	ck_assert_msg(c.flags == flags, "%s: flags %x", s, c.flags);
}

#define B(n) (UINT64_C(1) << (n))

START_TEST(test_valid)
{
	const unsigned all =
	    CRON_MIN_STAR | CRON_HOUR_STAR | CRON_DOM_STAR | CRON_DOW_STAR;

	expect(
	    "* * * * *", ALL_MIN, ALL_HOUR, ALL_DOM, ALL_MONTH, ALL_DOW, all);
	expect("0 0 1 1 0", B(0), 1, B(1), B(1), 1, 0);
	expect("*/15 */6 */10 */4 */2", B(0) | B(15) | B(30) | B(45),
	    B(0) | B(6) | B(12) | B(18), B(1) | B(11) | B(21) | B(31),
	    B(1) | B(5) | B(9), B(0) | B(2) | B(4) | B(6), all);
	/* Steps larger than the range keep the start, as cronie does. */
	expect("*/100 */24 */31 */12 */8", B(0), 1, B(1), B(1), 1, all);
	expect("5-10/100 0-23/23 3-31/28 * *", B(5), B(0) | B(23), B(3) | B(31),
	    ALL_MONTH, ALL_DOW, CRON_DOW_STAR);
	expect("*/99999999999999999999 0 1 * *", B(0), 1, B(1), ALL_MONTH,
	    ALL_DOW, CRON_MIN_STAR | CRON_DOW_STAR);
	expect("1-59/2 1-23/2 2-30/2 2-12/2 1-7/2", 0xaaaaaaaaaaaaaaaULL,
	    0xaaaaaa, 0x55555554, 0x1554, B(1) | B(3) | B(5) | B(0), 0);
	/* Duplicates and leading zeros are fine. */
	expect("05,5,005 00 01 01 00", B(5), 1, B(1), B(1), 1, 0);
	/* Day-of-week 7 is Sunday; a step of 7 selects 0 and 7. */
	expect("0 0 * * 7", B(0), 1, ALL_DOM, ALL_MONTH, 1, CRON_DOM_STAR);
	expect("0 0 * * */7", B(0), 1, ALL_DOM, ALL_MONTH, 1, 0xc);
	expect(
	    "0 0 * * 0-7", B(0), 1, ALL_DOM, ALL_MONTH, ALL_DOW, CRON_DOM_STAR);
	expect("0 0 * * 6-7", B(0), 1, ALL_DOM, ALL_MONTH, B(6) | B(0),
	    CRON_DOM_STAR);
	/* A day-of-week range ending in 0 or SUN runs through Sunday. */
	expect("0 0 * * 5-0", B(0), 1, ALL_DOM, ALL_MONTH, B(5) | B(6) | B(0),
	    CRON_DOM_STAR);
	expect("0 0 * * FRI-SUN", B(0), 1, ALL_DOM, ALL_MONTH,
	    B(5) | B(6) | B(0), CRON_DOM_STAR);
	expect("0 0 * * 7-0", B(0), 1, ALL_DOM, ALL_MONTH, B(0), CRON_DOM_STAR);
	expect("0 0 * * 1-7/2", B(0), 1, ALL_DOM, ALL_MONTH,
	    B(1) | B(3) | B(5) | B(0), CRON_DOM_STAR);
	expect("0 0 * * SUN-SUN", B(0), 1, ALL_DOM, ALL_MONTH, B(0),
	    CRON_DOM_STAR);
	expect("0 0 * * MON-SUN", B(0), 1, ALL_DOM, ALL_MONTH, ALL_DOW,
	    CRON_DOM_STAR);
	/* The flags say whether the field begins with '*'. */
	expect("1,* 2,* 1,* * 1,*", ALL_MIN, ALL_HOUR, ALL_DOM, ALL_MONTH,
	    ALL_DOW, 0);
	expect("*,1 *,2 *,1 *,3 *,1", ALL_MIN, ALL_HOUR, ALL_DOM, ALL_MONTH,
	    ALL_DOW, all);
	/* An OR expression may name days no month of the month field has. */
	expect("0 0 30 2 MON", B(0), 1, B(30), B(2), B(1), 0);
	expect("0 0 29 2 *", B(0), 1, B(29), B(2), ALL_DOW, CRON_DOW_STAR);
	expect("0 0 31 4,5 *", B(0), 1, B(31), B(4) | B(5), ALL_DOW,
	    CRON_DOW_STAR);
}
END_TEST

START_TEST(test_text_and_length)
{
	char buf[256];
	struct cron c;

	/* 127 characters fit text[128]; 128 do not. */
	strcpy(buf, "0");
	for (int i = 0; i < 59; i++)
		strcat(buf, ",0");
	strcat(buf, " 0 * * *");
	ck_assert_uint_eq(strlen(buf), 127);
	c = parse_ok(buf);
	ck_assert_str_eq(c.text, buf);
	strcat(buf, " ");
	c = parse_ok(buf);
	buf[126] = ' ';
	buf[127] = '*';
	parse_err(buf, "expression is too long");
	/* Surrounding white space does not count. */
	snprintf(buf, sizeof(buf), "  \t%s\n", c.text);
	ck_assert_str_eq(parse_ok(buf).text, c.text);
}
END_TEST

START_TEST(test_whitespace)
{
	struct cron ref = parse_ok("0 12 * * 1-5"), c;
	static const char *const forms[] = {
	    "0\t12\t*\t*\t1-5",
	    "0   12 *\t \t* 1-5",
	    "   0 12 * * 1-5",
	    "0 12 * * 1-5   ",
	    "\t0 12 * * 1-5\n",
	    "0 12 * * 1-5\r\n",
	    "\v\f0 12 * * 1-5 \r",
	};

	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		c = parse_ok(forms[i]);
		ck_assert_uint_eq(c.minute, ref.minute);
		ck_assert_uint_eq(c.hour, ref.hour);
		ck_assert_uint_eq(c.dom, ref.dom);
		ck_assert_uint_eq(c.month, ref.month);
		ck_assert_uint_eq(c.dow, ref.dow);
		ck_assert_uint_eq(c.flags, ref.flags);
	}
	ck_assert_str_eq(parse_ok("\t0\t12 * * 1-5 \n").text, "0\t12 * * 1-5");
	parse_err("0 12 * * 1-5 , ", FIELDS_MSG "6");
	parse_err("0 12 * * 1 ,5", FIELDS_MSG "6");
}
END_TEST

/*
 * For every field, the values min-1 (when not negative), min, min+1,
 * max-1, max and max+1, alone and as a range of one value.
 */
START_TEST(test_boundaries)
{
	static const struct {
		const char *name;
		int min, max;
	} f[5] = {{"minute", 0, 59}, {"hour", 0, 23}, {"day-of-month", 1, 31},
	    {"month", 1, 12}, {"day-of-week", 0, 7}};

	for (int i = 0; i < 5; i++) {
		int vals[6] = {f[i].min - 1, f[i].min, f[i].min + 1,
		    f[i].max - 1, f[i].max, f[i].max + 1};

		for (int j = 0; j < 12; j++) {
			char s[64] = "", fld[16], msg[128];
			int v = vals[j / 2],
			    ok = v >= f[i].min && v <= f[i].max;
			struct cron c;
			uint64_t bits[5];

			if (v < 0)
				continue;
			snprintf(
			    fld, sizeof(fld), j % 2 ? "%d-%d" : "%d", v, v);
			for (int k = 0; k < 5; k++) {
				strcat(s, k == i ? fld : "*");
				strcat(s, k < 4 ? " " : "");
			}
			snprintf(msg, sizeof(msg),
			    "%s: %d is out of range %d-%d", f[i].name, v,
			    f[i].min, f[i].max);
			if (!ok) {
				parse_err(s, msg);
				continue;
			}
			c = parse_ok(s);
			bits[0] = c.minute, bits[1] = c.hour, bits[2] = c.dom;
			bits[3] = c.month, bits[4] = c.dow;
			ck_assert_msg(
			    bits[i] == B(i == 4 && v == 7 ? 0 : v), "%s", s);
		}
	}
}
END_TEST

START_TEST(test_names)
{
	static const char *const months[] = {"jan", "feb", "mar", "apr", "may",
	    "jun", "jul", "aug", "sep", "oct", "nov", "dec"};
	static const char *const days[] = {
	    "sun", "mon", "tue", "wed", "thu", "fri", "sat"};
	char s[64], msg[64];

	for (int i = 0; i < 12; i++) {
		const char *n = months[i];

		snprintf(s, sizeof(s), "0 0 1 %s *", n);
		ck_assert_uint_eq(parse_ok(s).month, B(i + 1));
		snprintf(s, sizeof(s), "0 0 1 %c%c%c *", n[0] - 32, n[1] - 32,
		    n[2] - 32);
		ck_assert_uint_eq(parse_ok(s).month, B(i + 1));
		snprintf(
		    s, sizeof(s), "0 0 1 %c%c%c *", n[0] - 32, n[1], n[2] - 32);
		ck_assert_uint_eq(parse_ok(s).month, B(i + 1));
		snprintf(s, sizeof(s), "0 0 * * %s", n);
		snprintf(msg, sizeof(msg), "day-of-week: unknown name %s", n);
		parse_err(s, msg);
	}
	for (int i = 0; i < 7; i++) {
		const char *n = days[i];

		snprintf(s, sizeof(s), "0 0 * * %s", n);
		ck_assert_uint_eq(parse_ok(s).dow, B(i));
		snprintf(s, sizeof(s), "0 0 * * %c%c%c", n[0] - 32, n[1], n[2]);
		ck_assert_uint_eq(parse_ok(s).dow, B(i));
		snprintf(s, sizeof(s), "0 0 * %s *", n);
		snprintf(msg, sizeof(msg), "month: unknown name %s", n);
		parse_err(s, msg);
	}
	expect("0 0 * jan,jul MON-FRI", B(0), 1, ALL_DOM, B(1) | B(7), 0x3e,
	    CRON_DOM_STAR);
	expect("0 0 * Jan-Mar/2,DEC sat,Sun", B(0), 1, ALL_DOM,
	    B(1) | B(3) | B(12), B(6) | B(0), CRON_DOM_STAR);
	expect("0 0 * 1-MAR tue-5", B(0), 1, ALL_DOM, 0xe, 0x3c, CRON_DOM_STAR);
}
END_TEST

START_TEST(test_aliases)
{
	static const char *const pairs[][2] = {
	    {"@yearly", "0 0 1 1 *"},
	    {"@annually", "0 0 1 1 *"},
	    {"@monthly", "0 0 1 * *"},
	    {"@weekly", "0 0 * * 0"},
	    {"@daily", "0 0 * * *"},
	    {"@midnight", "0 0 * * *"},
	    {"@hourly", "0 * * * *"},
	};

	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		struct cron a = parse_ok(pairs[i][0]);
		struct cron e = parse_ok(pairs[i][1]);
		char up[32];

		ck_assert_str_eq(a.text, pairs[i][0]);
		memcpy(a.text, e.text, sizeof(a.text));
		ck_assert_msg(
		    memcmp(&a, &e, sizeof(a)) == 0, "%s", pairs[i][0]);
		snprintf(up, sizeof(up), "  %s\t", pairs[i][0]);
		ck_assert_str_eq(parse_ok(up).text, pairs[i][0]);
		for (size_t k = 0; pairs[i][0][k] != '\0'; k++)
			up[k] =
			    (char)(pairs[i][0][k] == '@' ? '@'
			                                 : pairs[i][0][k] - 32);
		up[strlen(pairs[i][0])] = '\0';
		ck_assert_int_eq(cron_parse(up, &a, NULL, 0), -1);
	}
}
END_TEST

START_TEST(test_wildcard)
{
	static const struct {
		const char *expr;
		int wild;
	} t[] = {
	    {"*/15 * * * *", 1},
	    {"30 */2 * * *", 1},
	    {"* 3 * * *", 1},
	    {"30 2 * * *", 0},
	    {"0 9-17 * * *", 0},
	    {"0 0-23/2 * * *", 0},
	    {"0,* 1 * * *", 0},
	    {"0 0 * * *", 0},
	    {"@hourly", 1},
	    {"@daily", 0},
	    {"@weekly", 0},
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct cron c = parse_ok(t[i].expr);

		ck_assert_msg(
		    cron_is_wildcard(&c) == t[i].wild, "%s", t[i].expr);
	}
}
END_TEST

START_TEST(test_day_rule)
{
	struct cron c = parse_ok("0 0 13 * FRI");

	/* OR: every 13th and every Friday. */
	ck_assert(cron_day_matches(&c, 2024, 9, 13));  /* Friday 13th */
	ck_assert(cron_day_matches(&c, 2024, 10, 13)); /* a Sunday */
	ck_assert(cron_day_matches(&c, 2024, 10, 4));  /* a Friday */
	ck_assert(!cron_day_matches(&c, 2024, 10, 5)); /* a Saturday */
	/* AND: a day-of-month of "star-slash-2" begins with '*'. */
	c = parse_ok("0 0 */2 * MON"); /* odd days that are Mondays */
	ck_assert(cron_day_matches(&c, 2024, 1, 1));
	ck_assert(!cron_day_matches(&c, 2024, 1, 8));
	ck_assert(!cron_day_matches(&c, 2024, 1, 3));
	ck_assert(cron_day_matches(&c, 2024, 1, 15));
	/* AND through the day-of-week field: the first Sunday. */
	c = parse_ok("0 0 1-7 * */7");
	ck_assert(cron_day_matches(&c, 2024, 1, 7));
	ck_assert(!cron_day_matches(&c, 2024, 1, 14));
	ck_assert(!cron_day_matches(&c, 2024, 1, 6));
	/* OR with both fields restricted. */
	c = parse_ok("0 0 1,15 * 1-5");
	ck_assert(cron_day_matches(&c, 2024, 6, 1));   /* Saturday 1st */
	ck_assert(cron_day_matches(&c, 2024, 6, 3));   /* Monday */
	ck_assert(!cron_day_matches(&c, 2024, 6, 16)); /* Sunday */
	/* "1,*" does not begin with '*': OR, so every day. */
	c = parse_ok("0 0 1,* * MON");
	ck_assert(cron_day_matches(&c, 2024, 6, 16));
	c = parse_ok("@weekly");
	ck_assert(cron_day_matches(&c, 2024, 6, 16));
	ck_assert(!cron_day_matches(&c, 2024, 6, 15));
	/* Leap days, far dates, invalid dates. */
	c = parse_ok("0 0 29 2 *");
	ck_assert(cron_day_matches(&c, 2000, 2, 29));
	ck_assert(!cron_day_matches(&c, 2100, 2, 29));
	ck_assert(!cron_day_matches(&c, 2024, 2, 30));
	ck_assert(!cron_day_matches(&c, 2024, 13, 1));
	ck_assert(!cron_day_matches(&c, 2024, 0, 1));
	ck_assert(!cron_day_matches(&c, 2024, 1, 0));
	c = parse_ok("0 0 * * MON");
	ck_assert(cron_day_matches(&c, 1, 1, 1));      /* 0001-01-01 */
	ck_assert(cron_day_matches(&c, 9999, 12, 27)); /* a Monday */
	ck_assert(!cron_day_matches(&c, 9999, 12, 31));
}
END_TEST

START_TEST(test_next_examples)
{
	struct cron c = parse_ok("0 0 29 2 *");
	int64_t t;

	ck_assert_int_eq(cron_next_wall(&c, wall(2097, 1, 1, 0, 0), CV_NEVER),
	    wall(2104, 2, 29, 0, 0));
	ck_assert_int_eq(cron_next_wall(&c, wall(2096, 2, 29, 0, 0), CV_NEVER),
	    wall(2096, 2, 29, 0, 0));
	ck_assert_int_eq(
	    cron_next_wall(&c, wall(2096, 2, 29, 0, 0) + 1, CV_NEVER),
	    wall(2104, 2, 29, 0, 0));
	ck_assert_int_eq(
	    cron_next_wall(&c, wall(2097, 1, 1, 0, 0), wall(2104, 2, 29, 0, 0)),
	    CV_NEVER);

	/* Fridays and the 13th, in order. */
	c = parse_ok("0 0 13 * FRI");
	static const int want[][2] = {{9, 6}, {9, 13}, {9, 20}, {9, 27},
	    {10, 4}, {10, 11}, {10, 13}, {10, 18}};
	t = wall(2024, 9, 1, 0, 0);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		t = cron_next_wall(&c, t, CV_NEVER);
		ck_assert_int_eq(t, wall(2024, want[i][0], want[i][1], 0, 0));
		t++;
	}

	/* Within a day: the next minute, the next hour, the next day. */
	c = parse_ok("15,45 9-17/4 * * *");
	ck_assert_int_eq(cron_next_wall(&c, wall(2024, 5, 1, 9, 16), CV_NEVER),
	    wall(2024, 5, 1, 9, 45));
	ck_assert_int_eq(cron_next_wall(&c, wall(2024, 5, 1, 9, 46), CV_NEVER),
	    wall(2024, 5, 1, 13, 15));
	ck_assert_int_eq(cron_next_wall(&c, wall(2024, 5, 1, 17, 46), CV_NEVER),
	    wall(2024, 5, 2, 9, 15));
	ck_assert_int_eq(
	    cron_next_wall(&c, wall(2024, 12, 31, 23, 0), CV_NEVER),
	    wall(2025, 1, 1, 9, 15));
	ck_assert_int_eq(
	    cron_next_wall(&c, wall(2024, 5, 1, 9, 44) + 59, CV_NEVER),
	    wall(2024, 5, 1, 9, 45));

	/* The last day of a month via the Vixie OR rule is not possible,
	 * but the 31st skips the short months. */
	c = parse_ok("0 12 31 * *");
	ck_assert_int_eq(cron_next_wall(&c, wall(2024, 4, 1, 0, 0), CV_NEVER),
	    wall(2024, 5, 31, 12, 0));
}
END_TEST

START_TEST(test_next_edges)
{
	struct cron c = parse_ok("* * * * *");

	/* Floor semantics for negative values; limit is exclusive. */
	ck_assert_int_eq(cron_next_wall(&c, -1, CV_NEVER), 0);
	ck_assert_int_eq(cron_next_wall(&c, -59, CV_NEVER), 0);
	ck_assert_int_eq(cron_next_wall(&c, -60, CV_NEVER), -60);
	ck_assert_int_eq(cron_next_wall(&c, -61, CV_NEVER), -60);
	ck_assert_int_eq(cron_next_wall(&c, 0, 60), 0);
	ck_assert_int_eq(cron_next_wall(&c, 1, 60), CV_NEVER);
	ck_assert_int_eq(cron_next_wall(&c, 1, 61), 60);
	ck_assert_int_eq(cron_next_wall(&c, 0, 0), CV_NEVER);
	ck_assert_int_eq(cron_next_wall(&c, 100, 0), CV_NEVER);

	/* The ends of the supported range, and beyond. */
	ck_assert_int_eq(
	    cron_next_wall(&c, CV_TIME_MIN, CV_NEVER), CV_TIME_MIN);
	/* wall times reach two days past the instants in range */
	ck_assert_int_eq(
	    cron_next_wall(&c, INT64_MIN, CV_NEVER), CV_TIME_MIN - 172800);
	ck_assert_int_eq(
	    cron_next_wall(&c, CV_TIME_MAX - 59, CV_NEVER), CV_TIME_MAX - 59);
	ck_assert_int_eq(
	    cron_next_wall(&c, CV_TIME_MAX - 58, CV_NEVER), CV_TIME_MAX + 1);
	ck_assert_int_eq(
	    cron_next_wall(&c, CV_TIME_MAX + 172800 - 59, CV_NEVER),
	    CV_TIME_MAX + 172800 - 59);
	ck_assert_int_eq(
	    cron_next_wall(&c, CV_TIME_MAX + 172800 - 58, CV_NEVER), CV_NEVER);
	ck_assert_int_eq(cron_next_wall(&c, INT64_MAX, INT64_MAX), CV_NEVER);
	c = parse_ok("59 23 31 12 *");
	ck_assert_int_eq(
	    cron_next_wall(&c, CV_TIME_MIN, CV_NEVER), wall(1, 12, 31, 23, 59));
	ck_assert_int_eq(cron_next_wall(&c, wall(9999, 1, 1, 0, 0), CV_NEVER),
	    CV_TIME_MAX - 59);
	c = parse_ok("0 0 1 1 *");
	ck_assert_int_eq(
	    cron_next_wall(&c, CV_TIME_MIN, CV_NEVER), CV_TIME_MIN);
	ck_assert_int_eq(
	    cron_next_wall(&c, CV_TIME_MIN + 1, CV_NEVER), wall(2, 1, 1, 0, 0));
	ck_assert_int_eq(cron_next_wall(&c, wall(9999, 1, 1, 0, 1), CV_NEVER),
	    CV_TIME_MAX + 1);
	ck_assert_int_eq(
	    cron_next_wall(&c, CV_TIME_MAX + 2, CV_NEVER), CV_NEVER);

	/* A hand-made struct that never matches ends, and empty fields. */
	c = parse_ok("0 0 1 1 *");
	c.dom = 1u << 31;
	c.month = 1u << 2;
	ck_assert_int_eq(cron_next_wall(&c, 0, CV_NEVER), CV_NEVER);
	c = parse_ok("* * * * *");
	c.minute = 0;
	ck_assert_int_eq(cron_next_wall(&c, 0, CV_NEVER), CV_NEVER);
	c = parse_ok("* * * * *");
	c.dow = 0;
	ck_assert_int_eq(cron_next_wall(&c, 0, CV_NEVER), CV_NEVER);
}
END_TEST

/* --- The oracle and the random expressions. --- */

struct rng {
	uint64_t s; /* xorshift64* state, never 0 */
};

static uint64_t
rnd(struct rng *r)
{
	r->s ^= r->s >> 12;
	r->s ^= r->s << 25;
	r->s ^= r->s >> 27;
	return r->s * UINT64_C(2685821657736338717);
}

/* A uniform-enough integer in [lo, hi]. */
static int64_t
rnd_in(struct rng *r, int64_t lo, int64_t hi)
{
	return lo + (int64_t)(rnd(r) % (uint64_t)(hi - lo + 1));
}

/* What the generator meant: bit sets and day flags, read independently. */
struct expect {
	char text[128];   /* the expression */
	uint64_t bits[5]; /* per field, day-of-week 7 folded to 0 */
	int star[5];      /* field begins with '*' */
};

static const struct {
	int min, max; /* the field's range */
} fr[5] = {{0, 59}, {0, 23}, {1, 31}, {1, 12}, {0, 7}};

/* Appends a value: a number, or sometimes a name in a random case. */
static void
put_value(struct rng *r, char *buf, size_t len, int f, int v)
{
	static const char *const mn[] = {"jan", "feb", "mar", "apr", "may",
	    "jun", "jul", "aug", "sep", "oct", "nov", "dec"};
	static const char *const dn[] = {
	    "sun", "mon", "tue", "wed", "thu", "fri", "sat"};
	const char *name = NULL;
	char s[8];

	if (f == 3 && rnd(r) % 3 == 0)
		name = mn[v - 1];
	if (f == 4 && v < 7 && rnd(r) % 3 == 0)
		name = dn[v];
	if (name == NULL) {
		snprintf(s, sizeof(s), rnd(r) % 16 ? "%d" : "%02d", v);
	} else {
		for (int i = 0; i < 3; i++)
			s[i] = (char)(name[i] - (rnd(r) % 2 ? 32 : 0));
		s[3] = '\0';
	}
	strncat(buf, s, len - strlen(buf) - 1);
}

/* Appends one random element of field f and sets its values in *bits. */
static void
gen_element(struct rng *r, char *buf, size_t len, int f, uint64_t *bits)
{
	int min = fr[f].min, max = fr[f].max, kind = (int)rnd_in(r, 0, 4);
	int lo = min, hi = max, step = 1, shown_hi;
	char s[16];

	if (kind >= 2) {
		lo = hi = (int)rnd_in(r, min, max);
		if (kind >= 3)
			hi = (int)rnd_in(r, lo, max);
	}
	if (kind == 1 || kind == 4)
		step = (int)(rnd(r) % 8 ? rnd_in(r, 1, max - min + 1)
		                        : rnd_in(r, 1, 200));
	shown_hi = hi;
	if (f == 4 && kind == 3 && hi == 7 && lo > 0 && rnd(r) % 2)
		shown_hi = 0; /* "5-0" or "FRI-SUN" means through Sunday */
	if (kind <= 1) {
		strncat(buf, "*", len - strlen(buf) - 1);
	} else {
		put_value(r, buf, len, f, lo);
		if (kind >= 3) {
			strncat(buf, "-", len - strlen(buf) - 1);
			put_value(r, buf, len, f, shown_hi);
		}
	}
	if (kind == 1 || kind == 4) {
		snprintf(s, sizeof(s), "/%d", step);
		strncat(buf, s, len - strlen(buf) - 1);
	}
	for (int v = lo; v <= hi; v += step)
		*bits |= UINT64_C(1) << (f == 4 && v == 7 ? 0 : v);
}

/* Makes a random valid-syntax expression; 0 if it came out too long. */
static int
gen_expr(struct rng *r, struct expect *e)
{
	char buf[512] = "";

	memset(e, 0, sizeof(*e));
	for (int f = 0; f < 5; f++) {
		int n = rnd(r) % 10 < 7 ? 1 : (int)rnd_in(r, 2, 3);
		size_t start;

		if (f > 0)
			strcat(buf, rnd(r) % 8 ? " " : " \t ");
		start = strlen(buf);
		for (int i = 0; i < n; i++) {
			if (i > 0)
				strcat(buf, ",");
			gen_element(r, buf, sizeof(buf), f, &e->bits[f]);
		}
		e->star[f] = buf[start] == '*';
	}
	if (strlen(buf) >= sizeof(e->text))
		return 0;
	strcpy(e->text, buf);
	return 1;
}

/* Whether the expected sets can fire at all (the oracle's own reading). */
static int
expect_fires(const struct expect *e)
{
	static const int dim[13] = {
	    0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

	if (!e->star[2] && !e->star[4])
		return 1;
	for (int m = 1; m <= 12; m++)
		for (int d = 1; d <= dim[m]; d++)
			if ((e->bits[3] >> m & 1) && (e->bits[2] >> d & 1))
				return 1;
	return 0;
}

static int64_t
floor_div(int64_t a, int64_t b)
{
	return a / b - (a % b != 0 && a < 0);
}

/*
 * The oracle: walks minute by minute from from (rounded up to a minute),
 * skipping to the next midnight when the month or day does not match and to
 * the next hour when the hour does not, reading the calendar with gmtime_r().
 */
static int64_t
oracle_next(const struct expect *e, int64_t from, int64_t limit)
{
	int64_t t = -floor_div(-from, 60) * 60;
	int and_rule = e->star[2] || e->star[4];

	if (limit > CV_TIME_MAX + 1 + 172800)
		limit = CV_TIME_MAX + 1 + 172800;
	while (t < limit) {
		time_t tt = (time_t)t;
		struct tm tm;
		int dom, dow;

		gmtime_r(&tt, &tm);
		dom = e->bits[2] >> tm.tm_mday & 1;
		dow = e->bits[4] >> tm.tm_wday & 1;
		if (!(e->bits[3] >> (tm.tm_mon + 1) & 1) ||
		    !(and_rule ? dom && dow : dom || dow)) {
			t = (floor_div(t, 86400) + 1) * 86400;
			continue;
		}
		if (!(e->bits[1] >> tm.tm_hour & 1)) {
			t = (floor_div(t, 3600) + 1) * 3600;
			continue;
		}
		if (e->bits[0] >> tm.tm_min & 1)
			return t;
		t += 60;
	}
	return CV_NEVER;
}

/* A random starting point: anywhere, or near today, or on a boundary. */
static int64_t
rnd_from(struct rng *r)
{
	int64_t t;

	switch (rnd(r) % 4) {
	case 0:
		return rnd_in(r, CV_TIME_MIN, CV_TIME_MAX);
	case 1:
		return rnd_in(
		    r, wall(1960, 1, 1, 0, 0), wall(2110, 1, 1, 0, 0));
	case 2:
		t = rnd_in(r, wall(1, 1, 1, 0, 0), wall(9999, 12, 31, 0, 0));
		return floor_div(t, 86400) * 86400 - rnd_in(r, 0, 1) * 60;
	default:
		return rnd_in(r, CV_TIME_MAX - 86400 * 400, CV_TIME_MAX);
	}
}

/* Compares one search, bounded and unbounded, with the oracle. */
static int64_t
check_one(
    const struct expect *e, const struct cron *c, int64_t from, int64_t window)
{
	int64_t limit = from + window;
	int64_t want = oracle_next(e, from, limit);
	int64_t got = cron_next_wall(c, from, limit);
	int64_t open = cron_next_wall(c, from, CV_NEVER);

	ck_assert_msg(got == want,
	    "\"%s\" from %jd limit %jd: got %jd, want %jd", e->text,
	    (intmax_t)from, (intmax_t)limit, (intmax_t)got, (intmax_t)want);
	if (want != CV_NEVER)
		ck_assert_msg(open == want, "\"%s\" from %jd: unbounded %jd",
		    e->text, (intmax_t)from, (intmax_t)open);
	else
		ck_assert_msg(open == CV_NEVER || open >= limit,
		    "\"%s\" from %jd: unbounded %jd", e->text, (intmax_t)from,
		    (intmax_t)open);
	return got;
}

/* Checks the parse of e against what the generator meant. */
static void
check_parse(const struct expect *e, const struct cron *c)
{
	const unsigned star[5] = {
	    CRON_MIN_STAR, CRON_HOUR_STAR, CRON_DOM_STAR, 0, CRON_DOW_STAR};
	unsigned flags = 0;
	struct cron again;

	for (int f = 0; f < 5; f++)
		flags |= e->star[f] ? star[f] : 0;
	ck_assert_msg(c->minute == e->bits[0] && c->hour == e->bits[1] &&
	        c->dom == e->bits[2] && c->month == e->bits[3] &&
	        c->dow == e->bits[4] && c->flags == flags,
	    "\"%s\": bit sets differ", e->text);
	ck_assert_str_eq(c->text, e->text);
	ck_assert_int_eq(cron_parse(c->text, &again, NULL, 0), 0);
	ck_assert(memcmp(&again, c, sizeof(again)) == 0);
}

/* A random search window: mostly days, often a year, sometimes decades. */
static int64_t
rnd_window(struct rng *r)
{
	switch (rnd(r) % 10) {
	case 0:
		return rnd_in(r, 0, 86400LL * 366 * 30);
	case 1:
	case 2:
	case 3:
	case 4:
		return rnd_in(r, 0, 86400LL * 400);
	default:
		return rnd_in(r, 0, 86400 * 3);
	}
}

/*
 * Checks the parse of one random expression and three chains of three
 * successive fire times, each from a random start in a random window.
 */
static void
check_random(struct rng *r, const struct expect *e, const struct cron *c)
{
	check_parse(e, c);
	for (int k = 0; k < 3; k++) {
		int64_t t = rnd_from(r), w = rnd_window(r);

		for (int n = 0; n < 3 && t != CV_NEVER; n++) {
			t = check_one(e, c, t, w);
			if (t != CV_NEVER)
				t += rnd_in(r, 1, 60);
		}
	}
}

/*
 * 4000 random expressions (CRON_TEST_SEED picks another set); those the
 * generator's own reading says never fire must be rejected with the
 * never-fires message, all others must parse to the predicted bit sets.
 */
START_TEST(test_next_random)
{
	const char *env = getenv("CRON_TEST_SEED");
	struct rng r = {env ? strtoull(env, NULL, 0) : UINT64_C(0x5eed)};
	int done = 0;

	if (r.s == 0)
		r.s = 1;
	while (done < 4000) {
		struct expect e;
		struct cron c;
		char err[CV_ERRLEN];

		if (!gen_expr(&r, &e))
			continue;
		if (cron_parse(e.text, &c, err, sizeof(err)) == -1) {
			ck_assert_msg(
			    !expect_fires(&e) && strcmp(err, NEVER_MSG) == 0,
			    "\"%s\": %s", e.text, err);
			continue;
		}
		ck_assert_msg(expect_fires(&e), "\"%s\" parsed", e.text);
		check_random(&r, &e, &c);
		done++;
	}
}
END_TEST

/*
 * The rarest expressions: a weekday that must fall on 29 February, which
 * happens decades apart.  The answer is checked against the oracle, not
 * timed: timing is not a unit test.
 */
START_TEST(test_next_rare)
{
	static const char *const rare[] = {"0 0 29 2 */7", "59 23 29 2 */7",
	    "0 0 29 2 */1", "30 12 29 FEB *", "0 0 29 2 0-7/7", "0 0 * 2 */7"};

	for (size_t i = 0; i < sizeof(rare) / sizeof(rare[0]); i++) {
		struct expect e;
		struct cron c = parse_ok(rare[i]);
		int64_t t;

		memset(&e, 0, sizeof(e));
		strcpy(e.text, rare[i]);
		e.bits[0] = c.minute, e.bits[1] = c.hour, e.bits[2] = c.dom;
		e.bits[3] = c.month, e.bits[4] = c.dow;
		e.star[2] = (c.flags & CRON_DOM_STAR) != 0;
		e.star[4] = (c.flags & CRON_DOW_STAR) != 0;
		for (int64_t from = wall(1900, 1, 1, 0, 0);
		     from < wall(2500, 1, 1, 0, 0); from = t + 1) {
			t = cron_next_wall(&c, from, CV_NEVER);
			ck_assert_int_eq(t, oracle_next(&e, from, CV_NEVER));
		}
	}
	/* 29 February on a Sunday: 2004, 2032, 2060, 2088, then 2128. */
	struct cron c = parse_ok("0 0 29 2 SUN");
	c.flags |= CRON_DOW_STAR; /* force AND: OR would fire every Sunday */
	ck_assert_int_eq(cron_next_wall(&c, wall(2088, 3, 1, 0, 0), CV_NEVER),
	    wall(2128, 2, 29, 0, 0));
	c = parse_ok("0 0 29 2 */7");
	ck_assert_int_eq(cron_next_wall(&c, wall(2088, 3, 1, 0, 0), CV_NEVER),
	    wall(2128, 2, 29, 0, 0));
	ck_assert_int_eq(cron_next_wall(&c, wall(9990, 1, 1, 0, 0), CV_NEVER),
	    oracle_next(&(struct expect){.bits = {1, 1, 1u << 29, 1u << 2, 1},
	                    .star = {0, 0, 0, 0, 1}},
	        wall(9990, 1, 1, 0, 0), CV_NEVER));
}
END_TEST

/*
 * Every (month, day) pair under the AND rule: parse rejects exactly the ones
 * no month has; under the OR rule nothing is rejected.
 */
START_TEST(test_never_fires)
{
	static const int dim[13] = {
	    0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	char s[64], err[CV_ERRLEN];
	struct cron c;

	for (int m = 1; m <= 12; m++)
		for (int d = 1; d <= 31; d++) {
			snprintf(s, sizeof(s), "0 0 %d %d *", d, m);
			ck_assert_int_eq(cron_parse(s, &c, err, sizeof(err)),
			    d <= dim[m] ? 0 : -1);
			if (d > dim[m])
				ck_assert_str_eq(err, NEVER_MSG);
			snprintf(s, sizeof(s), "0 0 %d %d 1", d, m);
			ck_assert_int_eq(cron_parse(s, &c, NULL, 0), 0);
			ck_assert(cron_next_wall(&c, 0, CV_NEVER) != CV_NEVER);
		}
}
END_TEST

static Suite *
cron_suite(void)
{
	Suite *s = suite_create("cron");
	TCase *tc = tcase_create("parse");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_errors);
	tcase_add_test(tc, test_error_buffer);
	tcase_add_test(tc, test_valid);
	tcase_add_test(tc, test_text_and_length);
	tcase_add_test(tc, test_whitespace);
	tcase_add_test(tc, test_boundaries);
	tcase_add_test(tc, test_names);
	tcase_add_test(tc, test_aliases);
	tcase_add_test(tc, test_wildcard);
	tcase_add_test(tc, test_never_fires);
	suite_add_tcase(s, tc);
	tc = tcase_create("match");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_day_rule);
	tcase_add_test(tc, test_next_examples);
	tcase_add_test(tc, test_next_edges);
	suite_add_tcase(s, tc);
	tc = tcase_create("oracle");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_next_rare);
	tcase_add_test(tc, test_next_random);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return cvtest_run(cron_suite());
}
