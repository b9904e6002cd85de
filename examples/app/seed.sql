-- seed.sql - schema and data of the sample app's database (issue 5).
-- The server rebuilds its database from this file at every start, so every
-- run begins from the same rows. Money is integer cents. Order ids start at
-- 1040; the seeded orders were written by the same checkout code the server
-- runs today (see README.md, "Planted bugs").

PRAGMA foreign_keys = ON;
BEGIN;

CREATE TABLE reps (
	id          INTEGER PRIMARY KEY,
	name        TEXT NOT NULL,
	email       TEXT NOT NULL UNIQUE,
	region      TEXT NOT NULL,
	quota_cents INTEGER NOT NULL CHECK (quota_cents >= 0)
);

CREATE TABLE leads (
	id           INTEGER PRIMARY KEY,
	company      TEXT NOT NULL,
	contact_name TEXT NOT NULL,
	email        TEXT NOT NULL,
	stage        TEXT NOT NULL CHECK (stage IN
	             ('new', 'contacted', 'qualified', 'proposal', 'negotiation', 'won', 'lost')),
	value_cents  INTEGER NOT NULL CHECK (value_cents >= 0),
	rep_id       INTEGER NOT NULL REFERENCES reps(id),
	updated_at   TEXT NOT NULL
);

CREATE TABLE products (
	id          INTEGER PRIMARY KEY,
	sku         TEXT NOT NULL UNIQUE,
	name        TEXT NOT NULL,
	description TEXT NOT NULL,
	price_cents INTEGER NOT NULL CHECK (price_cents > 0),
	stock       INTEGER NOT NULL CHECK (stock >= 0)
);

CREATE TABLE users (
	id            INTEGER PRIMARY KEY,
	name          TEXT NOT NULL,
	email         TEXT NOT NULL UNIQUE,
	plan          TEXT NOT NULL CHECK (plan IN ('free', 'pro', 'enterprise')),
	beta          INTEGER NOT NULL DEFAULT 0 CHECK (beta IN (0, 1)),
	password_hash TEXT NOT NULL,
	created_at    TEXT NOT NULL
);

CREATE TABLE orders (
	id             INTEGER PRIMARY KEY AUTOINCREMENT,
	user_id        INTEGER NOT NULL REFERENCES users(id),
	status         TEXT NOT NULL CHECK (status IN ('placed', 'shipped', 'delivered', 'cancelled')),
	subtotal_cents INTEGER NOT NULL,
	shipping_cents INTEGER NOT NULL,
	tax_cents      INTEGER NOT NULL,
	total_cents    INTEGER NOT NULL,
	created_at     TEXT NOT NULL
);

CREATE TABLE order_items (
	id               INTEGER PRIMARY KEY AUTOINCREMENT,
	order_id         INTEGER NOT NULL REFERENCES orders(id),
	product_id       INTEGER NOT NULL REFERENCES products(id),
	qty              INTEGER NOT NULL CHECK (qty BETWEEN 1 AND 99),
	unit_price_cents INTEGER NOT NULL,
	line_total_cents INTEGER NOT NULL
);

-- value is JSON text; rule is how the server picks the value per user:
--   plan-in:<plan>,...   true when the user's plan is listed
--   user-beta            the user's beta opt-in
--   bucket:<a>,<b>,...   one of the values by user id (id mod count)
--   NULL                 the default for everyone
CREATE TABLE feature_flags (
	name          TEXT PRIMARY KEY,
	description   TEXT NOT NULL,
	kind          TEXT NOT NULL CHECK (kind IN ('boolean', 'string')),
	default_value TEXT NOT NULL,
	rule          TEXT
);

CREATE TABLE support_tickets (
	id         INTEGER PRIMARY KEY,
	user_id    INTEGER NOT NULL REFERENCES users(id),
	subject    TEXT NOT NULL,
	status     TEXT NOT NULL CHECK (status IN ('open', 'pending', 'closed')),
	priority   TEXT NOT NULL CHECK (priority IN ('low', 'normal', 'high')),
	created_at TEXT NOT NULL
);

CREATE INDEX leads_stage ON leads(stage);
CREATE INDEX order_items_order ON order_items(order_id);

INSERT INTO reps (id, name, email, region, quota_cents) VALUES
	(1, 'Ava Chen',        'ava.chen@example.test',        'West',    25000000),
	(2, 'Marcus Reyes',    'marcus.reyes@example.test',    'East',    22000000),
	(3, 'Priya Natarajan', 'priya.natarajan@example.test', 'Central', 20000000),
	(4, 'Jonas Berg',      'jonas.berg@example.test',      'EMEA',    24000000),
	(5, 'Lucia Fernandez', 'lucia.fernandez@example.test', 'LATAM',   15000000),
	(6, 'Sam Okafor',      'sam.okafor@example.test',      'APAC',    18000000);

INSERT INTO leads (id, company, contact_name, email, stage, value_cents, rep_id, updated_at) VALUES
	(101, 'Northwind Traders',    'Hana Ito',        'hana@northwind.example',    'new',         1200000, 1, '2025-03-03 09:12:00'),
	(102, 'Blue Harbor Logistics','Tom Alvarez',     'tom@blueharbor.example',    'new',          850000, 2, '2025-03-03 10:40:00'),
	(103, 'Quill & Ink',          'Rosa Lind',       'rosa@quillink.example',     'new',          320000, 5, '2025-03-04 08:05:00'),
	(104, 'Vertex Robotics',      'Dev Patel',       'dev@vertex.example',        'contacted',   4100000, 3, '2025-03-01 15:30:00'),
	(105, 'Green Valley Farms',   'Ines Moreau',     'ines@greenvalley.example',  'contacted',    960000, 4, '2025-02-27 11:00:00'),
	(106, 'Atlas Fitness',        'Kofi Mensah',     'kofi@atlasfit.example',     'contacted',   1500000, 6, '2025-03-02 13:45:00'),
	(107, 'Lumen Health',         'Sara Kim',        'sara@lumenhealth.example',  'qualified',   7800000, 1, '2025-02-25 16:20:00'),
	(108, 'Cobalt Mining Co',     'Pete Novak',      'pete@cobalt.example',       'qualified',  12500000, 4, '2025-02-24 09:00:00'),
	(109, 'Harbor Lights Hotels', 'Mei Tanaka',      'mei@harborlights.example',  'qualified',   2300000, 2, '2025-02-28 14:10:00'),
	(110, 'Pinecrest Schools',    'Luis Ortega',     'luis@pinecrest.example',    'proposal',    3600000, 5, '2025-02-20 10:30:00'),
	(111, 'Orbit Telecom',        'Nadia Haddad',    'nadia@orbit.example',       'proposal',    9900000, 3, '2025-02-22 12:00:00'),
	(112, 'Maple Street Bakery',  'Ann Cole',        'ann@maplebakery.example',   'proposal',     180000, 6, '2025-02-26 08:45:00'),
	(113, 'Ironclad Security',    'Victor Hale',     'victor@ironclad.example',   'negotiation', 6400000, 2, '2025-02-18 17:05:00'),
	(114, 'Sunrise Solar',        'Priti Shah',      'priti@sunrise.example',     'negotiation', 5200000, 1, '2025-02-19 09:50:00'),
	(115, 'Delta Freight',        'Oscar Lindqvist', 'oscar@deltafreight.example','won',         4700000, 4, '2025-02-10 11:11:00'),
	(116, 'Bright Minds Tutoring','Julia Rossi',     'julia@brightminds.example', 'won',          640000, 5, '2025-02-12 15:00:00'),
	(117, 'Cedar & Stone',        'Ben Carter',      'ben@cedarstone.example',    'won',         2100000, 3, '2025-02-14 10:20:00'),
	(118, 'Polar Foods',          'Eva Nilsen',      'eva@polarfoods.example',    'lost',        3300000, 6, '2025-02-05 13:30:00'),
	(119, 'Redwood Analytics',    'Chris Young',     'chris@redwood.example',     'lost',        1100000, 2, '2025-02-07 16:40:00'),
	(120, 'Aurora Media',         'Lena Fischer',    'lena@auroramedia.example',  'new',          750000, 4, '2025-03-04 12:15:00');

INSERT INTO products (id, sku, name, description, price_cents, stock) VALUES
	(1, 'KB-ERGO-01',  'Ergonomic Keyboard',       'Split layout, low-profile switches',      8900, 42),
	(2, 'DK-USBC-12',  'USB-C Dock',               '12 ports, 100 W pass-through charging',  12999, 17),
	(3, 'MS-WL-03',    'Wireless Mouse',           'Silent clicks, 18-month battery',         2450, 120),
	(4, 'ST-LAP-02',   'Laptop Stand',             'Aluminium, six height settings',          3995, 64),
	(5, 'HS-NC-07',    'Noise-Cancelling Headset', 'Boom mic, 30 h battery',                 14900, 9),
	(6, 'CM-1080-05',  'Webcam 1080p',             'Auto focus, privacy shutter',             5999, 33),
	(7, 'DM-XL-01',    'Desk Mat',                 '90 x 40 cm, stitched edges',              1875, 80),
	(8, 'CB-ORG-04',   'Cable Organizer Kit',      'Clips, sleeves and ties',                 1249, 150);

-- password_hash holds fake hashes; the debug endpoint must never show them.
INSERT INTO users (id, name, email, plan, beta, password_hash, created_at) VALUES
	(1, 'Dana Whitfield', 'dana@example.test', 'pro',        1, '$2b$12$Qm9ndXNIYXNoRm9yRGFuYS4uLi4uLi4uLi4uLi4uLi4uLi4u', '2024-06-01 10:00:00'),
	(2, 'Leo Park',       'leo@example.test',  'free',       0, '$2b$12$Qm9ndXNIYXNoRm9yTGVvLi4uLi4uLi4uLi4uLi4uLi4uLi4u', '2024-09-15 18:30:00'),
	(3, 'Mia Santos',     'mia@example.test',  'enterprise', 0, '$2b$12$Qm9ndXNIYXNoRm9yTWlhLi4uLi4uLi4uLi4uLi4uLi4uLi4u', '2023-11-20 08:45:00'),
	(4, 'Omar Haddad',    'omar@example.test', 'free',       1, '$2b$12$Qm9ndXNIYXNoRm9yT21hci4uLi4uLi4uLi4uLi4uLi4uLi4u', '2025-01-08 21:10:00');

INSERT INTO orders (id, user_id, status, subtotal_cents, shipping_cents, tax_cents, total_cents, created_at) VALUES
	(1040, 1, 'delivered',  4900, 599,  440,  5939, '2025-02-03 10:15:00'),
	(1041, 3, 'delivered', 21899,   0, 1752, 23651, '2025-02-05 14:02:00'),
	(1042, 2, 'delivered',  4373, 599,  398,  5370, '2025-02-09 09:30:00'),
	(1043, 1, 'shipped',   14900,   0, 1192, 16092, '2025-02-17 16:45:00'),
	(1044, 4, 'shipped',    6445, 599,  564,  7608, '2025-02-21 11:20:00'),
	(1045, 2, 'placed',     7248, 599,  628,  8475, '2025-03-01 19:05:00'),
	(1046, 3, 'placed',     8900,   0,  712,  9612, '2025-03-02 08:40:00'),
	(1047, 1, 'placed',     7745,   0,  620,  8365, '2025-03-04 12:00:00');

INSERT INTO order_items (order_id, product_id, qty, unit_price_cents, line_total_cents) VALUES
	(1040, 3, 2,  2450,  4900),
	(1041, 2, 1, 12999, 12999),
	(1041, 1, 1,  8900,  8900),
	(1042, 7, 1,  1875,  1875),
	(1042, 8, 2,  1249,  2498),
	(1043, 5, 1, 14900, 14900),
	(1044, 4, 1,  3995,  3995),
	(1044, 3, 1,  2450,  2450),
	(1045, 6, 1,  5999,  5999),
	(1045, 8, 1,  1249,  1249),
	(1046, 1, 1,  8900,  8900),
	(1047, 7, 2,  1875,  3750),
	(1047, 4, 1,  3995,  3995);

INSERT INTO feature_flags (name, description, kind, default_value, rule) VALUES
	('beta-search-v2',   'Product search also matches SKUs and descriptions', 'boolean', 'false',     'user-beta'),
	('experiment-group', 'Checkout banner experiment arm',                    'string',  '"control"', 'bucket:control,variant-a,variant-b'),
	('log-level',        'Console logging of the front end',                  'string',  '"warn"',    NULL),
	('new-ui-enabled',   'The redesigned header and cards',                   'boolean', 'false',     'plan-in:pro,enterprise');

INSERT INTO support_tickets (id, user_id, subject, status, priority, created_at) VALUES
	(501, 1, 'Invoice for order 1040 shows a different total',  'open',    'high',   '2025-02-04 09:00:00'),
	(502, 1, 'Can I change the delivery address?',              'closed',  'normal', '2025-02-18 12:30:00'),
	(503, 2, 'Charged more than the checkout page said',        'open',    'high',   '2025-02-10 08:10:00'),
	(504, 4, 'Laptop stand arrived scratched',                  'pending', 'normal', '2025-02-24 17:45:00'),
	(505, 1, 'Cart icon shows 1 but I added 3 mice',            'open',    'normal', '2025-03-04 12:05:00'),
	(506, 3, 'Need a VAT invoice',                              'pending', 'low',    '2025-03-02 09:15:00');

COMMIT;
