import { isPublicAddress } from './public-address.js';

describe('isPublicAddress', () => {
  it.each([
    '127.0.0.1',
    '127.255.0.9',
    '10.1.2.3',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '224.0.0.1',
    '255.255.255.255',
    '::1',
    '::',
    'fe80::1',
    'fc00::1',
    'fd00:ec2::254',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:a9fe:a9fe',
    '[::1]',
    'fe80::1%eth0',
    'localhost',
    '',
    '2001:db8::1',
    // Found by the security review: IPv4-compatible IPv6, in both spellings, and ranges a hand list missed.
    '::127.0.0.1',
    '::7f00:1',
    '::a00:1',
    '::5db8:d70e',
    '64:ff9b::7f00:1',
    '2002:7f00:1::',
    '2001::1',
    '100::1',
    '192.0.2.1',
    '198.51.100.7',
    '203.0.113.5',
    '198.18.0.1',
    '240.0.0.1',
    'ff02::1',
    'fec0::1',
    '::ffff:0:7f00:1',
  ])('refuses %s', (address) => {
    expect(isPublicAddress(address)).toBe(false);
  });

  it.each(['93.184.216.34', '8.8.8.8', '172.32.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8'])('accepts %s', (address) => {
    expect(isPublicAddress(address)).toBe(true);
  });
});
