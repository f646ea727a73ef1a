import { HttpService } from '@nestjs/axios';
import axios from 'axios';
import { firstValueFrom } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { TokenProvider } from 'nestjs-platform-auth';
import { usePlatformFixtures } from '../support/platform-fixture.js';

const start = usePlatformFixtures();

describe('two applications in one process', () => {
  it('share no axios instance, no token and no interceptor', async () => {
    const [a, b] = await Promise.all([start(), start()]);
    const httpA = a.moduleRef.get(HttpService);
    const httpB = b.moduleRef.get(HttpService);
    expect(httpA.axiosRef).not.toBe(httpB.axiosRef);
    expect(a.moduleRef.get(TokenProvider)).not.toBe(b.moduleRef.get(TokenProvider));

    await firstValueFrom(httpA.get('/api/billing'));
    await firstValueFrom(httpB.get('/api/billing'));
    const [tokenA, tokenB] = [await a.tokens.getAccessToken(), await b.tokens.getAccessToken()];
    expect(tokenA).not.toBe(tokenB);
    expect(a.platform.counters.exchanges.accepted).toBe(1);
    expect(b.platform.counters.exchanges.accepted).toBe(1);

    // Closing one removes its interceptor and leaves the other working.
    await a.close();
    const afterClose = await httpA.axiosRef.get(`${b.platform.url}/api/billing`, { validateStatus: () => true });
    expect(afterClose.status).toBe(401);
    expect((await firstValueFrom(httpB.get('/api/billing'))).status).toBe(200);
    expect(b.platform.counters.apiCalls.ok).toBe(2);
  });

  it('the global axios instance is never touched', async () => {
    const requestHandlers = (axios.interceptors.request as unknown as { handlers: unknown[] }).handlers.length;
    const f = await start();
    await firstValueFrom(f.http.get('/api/billing'));
    expect((axios.interceptors.request as unknown as { handlers: unknown[] }).handlers.length).toBe(requestHandlers);
    expect(f.http.axiosRef).not.toBe(axios);
  });
});
